"""An at-least-once task does not wait for librdkafka's 500 ms producer-id timer (issue 27).

``IdempotentProducer`` models librdkafka's idempotent producer without transactions as measured
(bench/README.md): no record leaves before the producer id is assigned; the id is requested when
a metadata response arrives, and the response at connection time finds no broker up, so without
another metadata request only the PID timer (500 ms) assigns it."""
from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.protocol.sink_config import SinkConfig


class IdempotentProducer:
    TIMER_S = 0.05  # librdkafka: 500 ms; shortened so that the test stays fast
    instances: list["IdempotentProducer"] = []

    def __init__(self, settings, metadata_error: Exception | None = None):
        self.settings, self.metadata_error = settings, metadata_error
        self.assigned, self.waited_for_timer = False, False
        self.metadata_topics: list = []
        self.queued = self.sent = 0
        IdempotentProducer.instances.append(self)

    def list_topics(self, topic=None, timeout=-1):
        self.metadata_topics.append(topic)
        if self.metadata_error:
            raise self.metadata_error
        self.assigned = True  # the response's PID request finds the broker up now

    def produce(self, topic, value, key, partition, **kwargs):
        self.queued += 1

    def _stats(self):
        state = "Assigned" if self.assigned else "WaitTransport"
        self.settings["stats_cb"](json.dumps({"eos": {"idemp_state": state, "producer_id": 7 if self.assigned else -1},
                                              "topics": {"t": {"partitions": {"0": {"msgs": self.sent}}}}}))

    def poll(self, timeout=0):
        self._stats()
        return 0

    def flush(self, timeout):
        if not self.assigned:  # records wait for the producer id: the PID timer fires
            self.waited_for_timer = True
            time.sleep(self.TIMER_S)
            self.assigned = True
        self.sent, self.queued = self.sent + self.queued, 0
        self._stats()
        return 0


@pytest.fixture(autouse=True)
def producers():
    IdempotentProducer.instances = []
    return IdempotentProducer.instances


def _config(tmp_path, exactly_once: bool = False) -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                      log_location=str(tmp_path / "log"), topic="t", exactly_once=exactly_once)


def _rows(n: int = 3):
    return pa.record_batch({"key": [str(i).encode() for i in range(n)], "value": [b"v"] * n})


def test_an_at_least_once_task_gets_its_producer_id_without_the_timer(tmp_path, producers):
    handle = KafkaWriter(_config(tmp_path), 1, 0, new_producer=IdempotentProducer).write([_rows()])
    producer, = producers
    assert not producer.waited_for_timer          # asked for metadata once the broker was up
    assert producer.metadata_topics == ["t"]      # the sink's topic, never every topic
    assert handle.records == 3 and handle.partitions == {"t": {"0": 3}} and handle.transactional_id is None


def test_the_topic_column_names_the_metadata_asked_for(tmp_path, producers):
    config = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                        log_location=str(tmp_path / "log"), exactly_once=False)
    rows = pa.record_batch({"topic": ["t", "u"], "value": [b"a", b"b"]})
    KafkaWriter(config, 1, 0, new_producer=IdempotentProducer).write([rows])
    assert producers[0].metadata_topics == ["t"]


def test_a_failed_metadata_request_leaves_the_write_to_the_flush(tmp_path, producers):
    def failing(settings):
        return IdempotentProducer(settings, metadata_error=RuntimeError("no broker"))
    handle = KafkaWriter(_config(tmp_path), 1, 0, new_producer=failing).write([_rows()])
    assert producers[0].waited_for_timer and handle.records == 3   # slower, never failed by the wait


def test_the_wait_is_bounded_and_asks_for_no_topic_list():
    from kafka_eos.txn.writer.producer_stats import LatestStats, await_producer_id
    class NeverAssigned(IdempotentProducer):
        def list_topics(self, topic=None, timeout=-1):
            self.metadata_topics.append(topic)
            time.sleep(0.01)
    stats = LatestStats()
    producer = NeverAssigned({"stats_cb": stats})
    started = time.monotonic()
    assert await_producer_id(producer, stats, "t", wait_s=0.1) is False
    assert time.monotonic() - started < 1.0 and producer.metadata_topics and set(producer.metadata_topics) == {"t"}
    assert await_producer_id(producer, stats, None) is False   # None would list every topic: not asked
    assert set(producer.metadata_topics) == {"t"}
