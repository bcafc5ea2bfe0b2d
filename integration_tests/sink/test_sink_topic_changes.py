"""An output topic deleted under a running query (real broker, real Spark).

The query stops within a bound with an error naming the topic, whether the broker re-creates the
topic on a producer's request (``auto.create.topics.enable=true``, the session broker) or not (a
broker of its own with ``false``); a restart before the operator accepts the topic is refused again
(issue 58); after the user re-creates the topic with its partition count and accepts it
(``accept_sink_topics``, what ``kafka-eos accept-topic`` runs), the restart writes every id after
the cut exactly once.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.errors import StreamingQueryException

from kafka_eos import connectors
from kafka_eos.connectors.dev.local_kafka import ClusterSettings
from integration_tests.kafka_tools import (assert_exactly_once, check_exactly_once,
                                           create_topic, output_ids, produce, read_all, unique)
from integration_tests.providers import local_broker

PARTITIONS = 3
STOP_BOUND_S = 60.0  # trigger 1 s: the next batch's writer is built as soon as the new ids arrive


def sink_options(bootstrap, out, checkpoint, prefix) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "topic": out, "transactional.id.prefix": prefix,
            "checkpointLocation": str(checkpoint), "kafka.transaction.timeout.ms": "300000"}


def accept_topic(bootstrap, out, checkpoint, prefix) -> None:
    """The operator's acceptance of the re-created topic (``kafka-eos accept-topic`` for code users)."""
    from kafka_eos.connectors.operate.accept_topic import accept_sink_topics
    done = accept_sink_topics(sink_options(bootstrap, out, checkpoint, prefix))
    assert done.exit_code == 0 and "accepted by the operator" in done.lines[0], done.lines


def start_query(spark, bootstrap, source, out, checkpoint, prefix, **sink_options):
    connectors.register(spark)
    df = (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest").load()
          .selectExpr("key", "CONCAT('out-', CAST(value AS STRING)) AS value"))
    writer = (df.writeStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
              .option("topic", out).option("transactional.id.prefix", prefix)
              .option("checkpointLocation", str(checkpoint)).option("kafka.transaction.timeout.ms", 300000))
    for key, value in sink_options.items():
        writer = writer.option(key, value)
    return writer.trigger(processingTime="1 second").start()


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
    refused = start_query(spark, bootstrap, source, out, tmp_path / "ck", prefix)  # an automatic restart
    with pytest.raises(StreamingQueryException):
        refused.awaitTermination(STOP_BOUND_S)
    assert "refused at an earlier start, not accepted since" in str(refused.exception())
    assert read_all(bootstrap, out, "read_uncommitted", idle_s=1.0) == [], "the refused restart wrote nothing"
    accept_topic(bootstrap, out, tmp_path / "ck", prefix)
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


@pytest.mark.chaos  # pauses a write task: `make chaos`
def test_topic_recreated_during_a_batch_gets_nothing_committed(spark, bootstrap, tmp_path):
    """The topic is deleted and re-created (same partition count, new id) while batch 1's only task
    waits before its first record: the task writes into the new topic, the driver's check before
    the decision aborts the batch's transaction and stops the query; the restart (accepting the
    re-created topic) writes every id of batch 1 exactly once."""
    source, out, prefix, faults = unique("in"), unique("out"), unique("topic-swap"), tmp_path / "faults"
    faults.mkdir()
    create_topic(bootstrap, source, 1)  # one source partition: batch 1 has one write task
    create_topic(bootstrap, out, PARTITIONS)
    produce_ids(bootstrap, source, range(0, 100))
    query = start_query(spark, bootstrap, source, out, tmp_path / "ck", prefix,
                        faultInjection="task_start@1", faultInjectionDir=str(faults))
    try:
        wait_for_ids(bootstrap, out, range(0, 100), query)
        produce_ids(bootstrap, source, range(100, 300))
        deadline = time.monotonic() + 120
        while not list(faults.glob("task_start.*")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(faults.glob("task_start.*")), "batch 1's task did not reach task_start"
        delete_topic(bootstrap, out)
        create_topic(bootstrap, out, PARTITIONS)
        (faults / "release").write_text("go")
        with pytest.raises(StreamingQueryException):
            query.awaitTermination(STOP_BOUND_S * 2)
    finally:
        if query.isActive:
            query.stop()
    message = str(query.exception())
    assert "OutputTopicChangedError" in message and f"output topic '{out}' recreated" in message, message
    written = read_all(bootstrap, out, "read_uncommitted", idle_s=1.5)
    assert written, "the paused task wrote nothing into the re-created topic"
    assert read_all(bootstrap, out, "read_committed", idle_s=1.5) == []  # its transaction was aborted
    accept_topic(bootstrap, out, tmp_path / "ck", prefix)
    restarted = start_query(spark, bootstrap, source, out, tmp_path / "ck", prefix)
    try:
        wait_for_ids(bootstrap, out, range(100, 300), restarted)
    finally:
        restarted.stop()
    assert_exactly_once(check_exactly_once(bootstrap, out, expected=range(100, 300)))
    print(f"re-created during batch 1: {len(written)} records written into the new topic, none committed")


def test_describe_topics_answers_repeatedly_on_a_real_broker(bootstrap):
    """Each check's DescribeTopics names the topic's id and partitions, and an unknown topic as
    None, call after call (a client dropped before its answer fails it with _DESTROY)."""
    import gc
    from kafka_eos.txn.topics.topic_guard import describe_topics
    topic = create_topic(bootstrap, unique("ident"), partitions=3)
    for _ in range(5):
        found = describe_topics({"bootstrap.servers": bootstrap}, [topic, unique("absent")], 30.0)
        gc.collect()
        assert found[topic] is not None and found[topic].partitions == 3
        assert sorted(v is None for v in found.values()) == [False, True]
