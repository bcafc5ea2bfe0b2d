"""Kafka -> kafka-eos source -> transform -> kafka-eos sink, exactly once, with real Spark."""
from __future__ import annotations

import pytest


from pyspark.errors import StreamingQueryException

from kafka_eos import connectors
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, output_ids, unique
from integration_tests.pipeline_runs import (kill_group, run_to_completion,
                                             seed_input, start_job, wait_for)

IDS = 2000


def run_query(spark, bootstrap, source_topic, out_topic, checkpoint, prefix, **sink_options):
    connectors.register(spark)
    df = (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source_topic).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", 700).load()
          .selectExpr("key", "CONCAT('out-', CAST(value AS STRING)) AS value"))
    writer = (df.writeStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
              .option("topic", out_topic).option("transactional.id.prefix", prefix)
              .option("checkpointLocation", str(checkpoint)).option("kafka.transaction.timeout.ms", 300000))
    for key, value in sink_options.items():
        writer = writer.option(key, value)
    query = writer.trigger(availableNow=True).start()
    try:
        query.awaitTermination(300)
    except StreamingQueryException:
        pass  # the caller inspects query.exception()
    return query


def test_end_to_end_each_id_exactly_once(spark, bootstrap, tmp_path):
    source, out = unique("in"), unique("out")
    seed_input(bootstrap, source, IDS)
    query = run_query(spark, bootstrap, source, out, tmp_path / "ck", unique("e2e"))
    assert query.exception() is None
    assert_exactly_once(check_exactly_once(bootstrap, out, IDS))
    batches = sorted((tmp_path / "ck" / "kafka-eos-sink").glob("[0-9]*.json"))
    assert len(batches) >= 3  # maxOffsetsPerTrigger split the input into several 2PC batches


def test_unsafe_timeout_stops_the_query_with_the_fix(spark, bootstrap, tmp_path):
    source, out = unique("in"), unique("out")
    seed_input(bootstrap, source, 10)
    query = run_query(spark, bootstrap, source, out, tmp_path / "ck", unique("bad"),
                      **{"kafka.transaction.timeout.ms": 3_600_000})
    assert query.exception() is not None
    message = str(query.exception())
    assert "exceeds the broker's transaction.max.timeout.ms 900000" in message and "Fix:" in message
    assert sum(output_ids(bootstrap, out).values()) == 0


@pytest.mark.chaos  # a long run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_a_newer_run_fences_a_stalled_older_one(bootstrap, tmp_path):
    """Run A stalls after pre-committing batch 1; run B (same checkpoint and prefix) takes over
    and finishes; when A wakes up its transactions are fenced and nothing is duplicated."""
    names = {"input": unique("in"), "output": unique("out")}
    seed_input(bootstrap, names["input"], IDS)
    faults = tmp_path / "faults"
    faults.mkdir()
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "ck"), "--prefix", unique("fence"), "--max-offsets", "700"]
    old = start_job(args + ["--fault", "before_decision@1", "--fault-dir", str(faults)], tmp_path / "a.log")
    wait_for((faults, "before_decision.*"), old, 300, tmp_path / "a.log")
    run_to_completion(args, tmp_path / "b.log")
    (faults / "release").write_text("go")
    try:
        old.wait(120)
    except Exception:  # noqa: BLE001 - whatever A does next, it must not duplicate
        kill_group(old)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
