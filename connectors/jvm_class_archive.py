"""Class-data archives (the JVM's AppCDS) of Spark's driver and of the local Kafka broker: a JVM
that maps one reads its classes parsed and verified from one file instead of loading them from
hundreds of jars. Measured 2026-11-27 (2 cores, C1 and the serial collector): a small streaming
job's spark-submit 12.1-14.8 core-s without, 7.2-7.3 with (wall 12.3-16.6 s -> 7.3 s); a broker's
format, start, one transaction and stop 3.9-4.7 core-s without, 2.5-2.8 with (up in 3.2-3.4 -> 1.6-1.7 s).

Enforced here:
- one archive per (Java build, the jars, the JVM options that shape it): its file name carries
  that key, so a changed JDK, pyspark, Kafka version or option never maps another's archive (the
  JVM would also refuse a mismatched one and start without it);
- Spark's is built by a warm-up job through the real ``spark-submit``: a session, a Python UDF, a
  Python data source read and written as a stream, so the classes a kafka-eos query loads are in
  it; Kafka's by a broker that formats, starts, runs one transaction and stops cleanly
  (``-XX:ArchiveClassesAtExit`` writes at a clean exit). Each is written under a temporary name
  and renamed, so a concurrent or interrupted build never leaves a partial archive;
- ``mapped`` names an archive only where it exists: without it a JVM starts as before.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

FORMAT = 1
ARCHIVES_ENV = "KAFKA_EOS_JVM_ARCHIVES"  # the folder of the archives a process maps (kafka-eos run, the suite)
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")  # no [cds] line where a job's own output goes


def _spark_jars() -> Path:
    import pyspark
    return Path(pyspark.__file__).parent / "jars"


def _java_version(java: str) -> str:
    done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=True)
    return done.stderr.strip()


@functools.lru_cache(maxsize=8)
def archive_file(directory: Path, name: str, jars: Path, options: str, java: str = "java") -> Path:
    """Where the ``name`` archive for this JDK, the jars in ``jars`` and these JVM ``options`` lives."""
    listing = sorted(f"{p.name}:{p.stat().st_size}" for p in Path(jars).glob("*.jar"))
    key = "\n".join([str(FORMAT), _java_version(java), " ".join(sorted(options.split())), *listing])
    return Path(directory).resolve() / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def spark_archive(directory: Path, options: str) -> Path:
    from kafka_eos.connectors.dev.java_env import java_binary  # JAVA_HOME's, else PATH's: spark-submit's too
    return archive_file(Path(directory), "spark-driver", _spark_jars(), options, java_binary())


def kafka_archive(directory: Path, java: str, classpath: str, options: str) -> Path:
    """The broker's archive for ``classpath`` (``<jars>/*``, ``java_env.broker_classpath``)."""
    return archive_file(Path(directory), "kafka-broker", Path(classpath.rstrip("*")), options, java)


def mapped(archive: Path) -> list[str]:
    """The JVM options that map ``archive``, if it was built; else none. A JVM whose classpath or
    collector differs from the archive's starts without it, silently (no ``[cds]`` warning on
    stdout, where a job's own output goes)."""
    return [f"-XX:SharedArchiveFile={archive}", *QUIET] if archive.is_file() else []


def _build(archive: Path, run: Callable[[Path], None]) -> Path:
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=archive.parent)) / archive.name
    try:
        run(partial)
        if not partial.is_file():
            raise RuntimeError(f"the JVM wrote no class archive {archive.name}")
        partial.replace(archive)
    finally:
        shutil.rmtree(partial.parent, ignore_errors=True)
    return archive


def build_kafka(directory: Path, options: str) -> Path:
    """The local broker's archive (``connectors.dev``'s pinned Kafka), built by one broker run."""
    from kafka_eos import client_factory
    from kafka_eos.connectors.dev.java_env import broker_classpath, java_binary
    from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster

    def run(partial: Path) -> None:
        dump = (f"-XX:ArchiveClassesAtExit={partial}",)
        with LocalKafkaCluster(ClusterSettings(jvm_options=dump)) as cluster:
            producer = client_factory.producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "warm-up",
                                                "log_level": 3})
            producer.init_transactions(60)
            producer.begin_transaction()
            producer.produce("warm-up", b"x")
            producer.commit_transaction(60)
            del producer  # before the broker stops: no reconnect noise

    return _build(kafka_archive(directory, java_binary(), broker_classpath(), options), run)


def build_spark(directory: Path, options: str, timeout: float = 600) -> Path:
    """Spark's driver archive for ``options``, built by one warm-up spark-submit."""
    return _build(spark_archive(directory, options), lambda partial: _warm_up_submit(partial, options, timeout))


def _warm_up_submit(partial: Path, options: str, timeout: float) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_SUBMIT_OPTS": f"{options} -XX:ArchiveClassesAtExit={partial}"}
    submit = Path(_spark_jars().parent / "bin" / "spark-submit")
    with tempfile.TemporaryDirectory() as work:
        done = subprocess.run([str(submit), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                               __file__, "warm-up", work], env=env, cwd=work, capture_output=True,
                              text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the JVM class archive was not built (exit {done.returncode}):\n"
                           + "\n".join((done.stdout + done.stderr).splitlines()[-30:]))


def warm_up(work: str) -> None:
    """What a kafka-eos query's driver loads: a session, a Python UDF, a Python data source read
    in batch and as an AvailableNow stream of Arrow batches, through ``mapInArrow``, into a
    Python Arrow streaming sink."""
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition, WriterCommitMessage
    from pyspark.sql.functions import udf

    from kafka_eos.connectors.spark_compat import StreamWriterBase, SupportsTriggerAvailableNow

    class Reader(DataSourceReader, DataSourceStreamReader, SupportsTriggerAvailableNow):
        def initialOffset(self) -> dict:
            return {"n": 0}

        def latestOffset(self, *args) -> dict:
            return {"n": 10}

        def prepareForTriggerAvailableNow(self) -> None:
            pass

        def partitions(self, *args) -> list:  # type: ignore[override]  # batch () and stream (start, end)
            return [InputPartition(0), InputPartition(1)]

        def read(self, partition):
            yield pa.RecordBatch.from_pydict({"id": list(range(5))})

    class Writer(StreamWriterBase):  # type: ignore[misc,valid-type]
        def write(self, iterator) -> WriterCommitMessage:
            sum(1 for _ in iterator)  # Arrow batches, or rows where pyspark has no Arrow stream writer
            return WriterCommitMessage()

        def commit(self, messages, batchId) -> None:
            pass

    class WarmUp(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kafka-eos-warm-up"

        def schema(self) -> str:
            return "id long"

        def reader(self, schema):
            return Reader()

        def streamReader(self, schema):
            return Reader()

        def streamWriter(self, schema, overwrite):
            return Writer()

    spark = SparkSession.builder.getOrCreate()
    spark.dataSource.register(WarmUp)
    spark.range(0, 10, 1, 2).select(udf(lambda x: x + 1, "long")("id")).collect()
    spark.read.format("kafka-eos-warm-up").load().count()
    stream = spark.readStream.format("kafka-eos-warm-up").load().mapInArrow(lambda batches: batches, "id long")
    query = (stream.writeStream.format("kafka-eos-warm-up").trigger(availableNow=True)
             .option("checkpointLocation", str(Path(work) / "checkpoint")).start())
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["warm-up"]:
        warm_up(sys.argv[2])
