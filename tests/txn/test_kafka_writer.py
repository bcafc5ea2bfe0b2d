"""KafkaWriter: the attempt's id; a stale attempt writes nothing (no producer is built)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_eos.txn.kafka_writer import KafkaWriter, StaleAttemptError
from kafka_eos.txn.sink_config import SinkConfig


def _config(tmp_path) -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                      log_location=str(tmp_path / "log"), topic="t")


def test_the_writer_uses_the_attempts_id(tmp_path):
    assert KafkaWriter(_config(tmp_path), 3, 2, attempt=1).transactional_id == "p-2-3"


def test_a_stale_attempt_writes_nothing(tmp_path):
    writer = KafkaWriter(_config(tmp_path), 1, 0, decided=lambda: True)
    rows = pa.record_batch({"value": ["a", "b"]})
    with pytest.raises(StaleAttemptError, match="batch 1 was decided without this task attempt"):
        writer.write([rows])                              # raised before any producer exists
    assert writer._producer is None


def test_records_a_task_read_go_to_the_sink_topic_with_their_headers(tmp_path):
    from kafka_eos.txn.records import Records
    records = Records(keys=[b"k", None], values=[b"v1", b"v2"], headers=[[("h", b"1")], None])
    topics, keys, values, partitions, headers = KafkaWriter(_config(tmp_path), 0, 0)._columns(records)
    assert (topics, keys, values, partitions, headers) == (["t", "t"], [b"k", None], [b"v1", b"v2"], None,
                                                           [[("h", b"1")], None])


def test_arrow_headers_become_name_value_pairs(tmp_path):
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    rows = pa.record_batch({"value": ["a", "b"], "headers": pa.array([[{"key": "h", "value": b"1"}], []],
                                                                       pa.list_(header))})
    headers = KafkaWriter(_config(tmp_path), 0, 0)._columns(rows)[4]
    assert headers == [[("h", b"1")], None]
