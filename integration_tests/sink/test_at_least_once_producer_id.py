"""An at-least-once task on a real broker does not wait for librdkafka's 500 ms producer-id
timer (issue 27): without ``producer_stats.await_producer_id`` every such write took >= 505 ms."""
from __future__ import annotations

import time

import pyarrow as pa

from integration_tests.kafka_tools import create_topic, unique
from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.protocol.sink_config import SinkConfig


def test_an_at_least_once_write_does_not_wait_for_the_pid_timer(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"), partitions=4)
    cfg = SinkConfig(producer_conf={"bootstrap.servers": bootstrap}, transactional_id_prefix=unique("p"),
                     log_location=str(tmp_path / "sinklog"), topic=topic, exactly_once=False)
    values = [str(i).encode() for i in range(100)]
    rows = pa.RecordBatch.from_pydict({"key": values, "value": values})
    took = []
    for task in range(3):
        started = time.monotonic()
        handle = KafkaWriter(cfg, batch_id=0, sink_partition=task).write([rows])
        took.append(time.monotonic() - started)
        assert handle.records == 100
    assert min(took) < 0.4, f"every at-least-once write waited for the producer id: {took}"
