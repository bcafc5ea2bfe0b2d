"""The sink's query start in a real Spark run (real broker): the start's cleanup runs in the
process that builds the writer of a batch's tasks, before any of them writes, and keeps what the
running batch needs."""
from __future__ import annotations

import json
import time
import uuid


from kafka_eos import connectors
from integration_tests.kafka_tools import (assert_exactly_once, check_exactly_once, create_topic, ongoing_transactions,
                                           unique)
from integration_tests.pipeline_runs import seed_input
from integration_tests.txn.test_txn_kafka import rows
from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.protocol.transactional_ids import owner_of

IDS = 300


def ongoing(bootstrap: str, prefix: str) -> set[str]:
    return {tid for tid in ongoing_transactions(bootstrap) if tid.startswith(prefix + "-")}


def test_a_dead_runs_transaction_is_aborted_before_the_first_batch_is_decided(spark, bootstrap, tmp_path):
    source, out, prefix = unique("in"), create_topic(bootstrap, unique("out")), unique("start")
    seed_input(bootstrap, source, IDS, partitions=1)
    checkpoint, faults, query_id = tmp_path / "ck", tmp_path / "faults", str(uuid.uuid4())
    checkpoint.mkdir()
    faults.mkdir()
    (checkpoint / "metadata").write_text(json.dumps({"id": query_id}))  # the query's ids: owner_of(query_id)
    dead_run = SinkConfig(producer_conf={"bootstrap.servers": bootstrap}, transactional_id_prefix=prefix,
                          log_location=str(checkpoint / "kafka-eos-sink"), topic=out, id_owner=owner_of(query_id))
    dead = KafkaWriter(dead_run, batch_id=0, sink_partition=7).write([rows(range(10**6, 10**6 + 5))])
    assert dead.transactional_id in ongoing(bootstrap, prefix)  # no task of the new run uses sink partition 7

    connectors.register(spark)
    df = (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest").load()
          .selectExpr("key", "CONCAT('out-', CAST(value AS STRING)) AS value"))
    query = (df.writeStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", out).option("transactional.id.prefix", prefix)
             .option("checkpointLocation", str(checkpoint)).option("kafka.transaction.timeout.ms", 300000)
             .option("faultInjection", "before_decision@0").option("faultInjectionDir", str(faults))
             .trigger(availableNow=True).start())
    try:
        deadline = time.monotonic() + 240
        while not list(faults.glob("before_decision.*")) and query.isActive and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(faults.glob("before_decision.*")), f"batch 0 did not reach its decision: {query.exception()}"
        open_now = ongoing(bootstrap, prefix)
        assert dead.transactional_id not in open_now, open_now   # the start aborted it, before any task
        assert f"{prefix}-{owner_of(query_id)}-0-0" in open_now   # batch 0's own transaction, kept
    finally:
        (faults / "release").write_text("go")
    query.awaitTermination(300)
    assert query.exception() is None
    assert_exactly_once(check_exactly_once(bootstrap, out, IDS))
