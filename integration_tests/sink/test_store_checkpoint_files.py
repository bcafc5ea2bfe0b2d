"""Issue 63: Spark's checkpoint read through the session's Hadoop (``checkpoint_files``), and the
query id a run hands its sink (``worker_handoff``), on the session's real Spark.

A checkpoint at a URI the driver's Python cannot open (hdfs://, gs://, abfss:// without pyarrow's
credentials) is read the way Spark wrote it; here the same reader runs over a ``file:`` URI of a
real query's checkpoint and must read exactly what Python's own file reads give. A new
checkpoint's query id written before the start must be the id Spark then gives the query.
"""
from __future__ import annotations

import json

from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.pipeline import checkpoint_files, worker_handoff
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.txn.log.log_store import LogReader


def _run_batches(spark, checkpoint: str, batches: int = 3):
    query = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
             .writeStream.format("noop").option("checkpointLocation", checkpoint)
             .trigger(processingTime="200 milliseconds").start())
    try:
        while len(query.recentProgress) < batches:
            query.awaitTermination(0.5)
    finally:
        query.stop()
    return query


def test_hadoop_reads_a_checkpoint_as_python_reads_its_files(spark, tmp_path):
    checkpoint = tmp_path / "ck"
    _run_batches(spark, str(checkpoint))
    jvm, conf = spark._sc._jvm, spark._jsc.hadoopConfiguration()
    for folder in ("offsets", "commits", ""):
        hadoop = checkpoint_files.HadoopReader(jvm, conf, f"file://{checkpoint}/{folder}".rstrip("/"))
        files = LogReader(str(checkpoint / folder) if folder else str(checkpoint))
        assert hadoop.names() == files.names() and hadoop.names(), folder  # no .crc, no temp files
        for name in hadoop.names():
            if (checkpoint / folder / name).is_file():
                assert hadoop.read_bytes(name) == files.read_bytes(name), (folder, name)
    assert checkpoint_files.HadoopReader(jvm, conf, f"file://{tmp_path}/none").names() == []
    assert checkpoint_files.HadoopReader(jvm, conf, f"file://{checkpoint}").read_bytes("none") is None


def test_the_query_id_written_before_the_start_is_the_one_spark_gives_the_query(spark, tmp_path):
    location = f"file://{tmp_path}/ck"
    written = worker_handoff._new_query_id(spark, location)
    assert json.loads((tmp_path / "ck" / "metadata").read_text()) == {"id": written}
    assert worker_handoff._new_query_id(spark, location) == written, "create-only: an existing id is kept"
    query = _run_batches(spark, location, 1)
    assert query.id == written
    assert CheckpointReader(str(tmp_path / "ck")).query_id() == written
    assert spark_compat.stream_metadata(spark._sc._jvm) is not None
