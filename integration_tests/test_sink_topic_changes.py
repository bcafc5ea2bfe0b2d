"""An output topic deleted under a running query (real broker, real Spark).

The query stops within a bound with an error naming the topic, whether the broker re-creates the
topic on a producer's request (``auto.create.topics.enable=true``, the session broker) or not (a
broker of its own with ``false``); after the user re-creates the topic with its partition count,
the restart writes every id after the cut exactly once.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.errors import StreamingQueryException

from kafka_eos import connectors
from kafka_eos.connectors.dev.local_kafka import ClusterSettings
from integration_tests.kafka_tools import (assert_exactly_once, check_exactly_once, create_topic, output_ids,
                                           produce, unique)
from integration_tests.providers import local_broker

PARTITIONS = 3
STOP_BOUND_S = 60.0  # trigger 1 s: the next batch's writer is built as soon as the new ids arrive


def start_query(spark, bootstrap, source, out, checkpoint, prefix):
    connectors.register(spark)
    df = (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest").load()
          .selectExpr("key", "CONCAT('out-', CAST(value AS STRING)) AS value"))
    return (df.writeStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
            .option("topic", out).option("transactional.id.prefix", prefix)
            .option("checkpointLocation", str(checkpoint)).option("kafka.transaction.timeout.ms", 300000)
            .trigger(processingTime="1 second").start())


def produce_ids(bootstrap, topic, ids):
    produce(bootstrap, topic, [(str(i).encode(), str(i).encode()) for i in ids])


def wait_for_ids(bootstrap, topic, ids, query):
    """Every id in ``topic`` once the query has committed everything the source holds now."""
    query.processAllAvailable()
    missing = set(ids) - set(output_ids(bootstrap, topic))
    assert not missing, f"{len(missing)} ids not in {topic}, e.g. {sorted(missing)[:5]}"


def delete_topic(bootstrap, name, timeout_s=30.0):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([name])[name].result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while name in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
        time.sleep(0.2)


def topic_exists(bootstrap, name) -> bool:
    return name in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def deleted_output_topic_run(spark, bootstrap, tmp_path) -> float:
    """The whole case; returns the seconds from the deletion to the query's stop."""
    source, out, prefix = unique("in"), unique("out"), unique("topic-gone")
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, out, PARTITIONS)
    produce_ids(bootstrap, source, range(0, 200))
    query = start_query(spark, bootstrap, source, out, tmp_path / "ck", prefix)
    try:
        wait_for_ids(bootstrap, out, range(0, 200), query)
        delete_topic(bootstrap, out)
        cut = time.monotonic()
        produce_ids(bootstrap, source, range(200, 500))  # the ids after the cut
        with pytest.raises(StreamingQueryException):
            query.awaitTermination(STOP_BOUND_S)
        stopped_s = time.monotonic() - cut
    finally:
        if query.isActive:
            query.stop()
    message = str(query.exception())
    assert "OutputTopicChangedError" in message and f"output topic '{out}'" in message, message
    assert "Fix:" in message and f"at least {PARTITIONS} partitions" in message
    if topic_exists(bootstrap, out):  # auto-created by a producer: the user deletes it first
        delete_topic(bootstrap, out)
    create_topic(bootstrap, out, PARTITIONS)
    restarted = start_query(spark, bootstrap, source, out, tmp_path / "ck", prefix)
    try:
        wait_for_ids(bootstrap, out, range(200, 500), restarted)
    finally:
        restarted.stop()
    assert_exactly_once(check_exactly_once(bootstrap, out, expected=range(200, 500)))
    print(f"output topic deleted: the query stopped {stopped_s:.1f} s after the deletion")
    return stopped_s


def test_deleted_output_topic_stops_the_query_and_the_restart_is_exactly_once(spark, bootstrap, tmp_path):
    """The session broker auto-creates topics (auto.create.topics.enable=true)."""
    assert deleted_output_topic_run(spark, bootstrap, tmp_path) < STOP_BOUND_S


@pytest.mark.chaos  # starts a broker of its own: `make chaos`
def test_deleted_output_topic_without_auto_create(spark, tmp_path):
    settings = ClusterSettings(heap="256m", extra=(("auto.create.topics.enable", "false"),))
    with local_broker(settings) as broker:
        assert deleted_output_topic_run(spark, broker.bootstrap, tmp_path) < STOP_BOUND_S
