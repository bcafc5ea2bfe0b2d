"""KafkaWriter: the attempt's id; a stale attempt writes nothing (no producer is built)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_eos.txn.writer.kafka_writer import KafkaWriter, StaleAttemptError
from kafka_eos.txn.writer.row_columns import row_columns, row_partitions, row_topics
from kafka_eos.txn.protocol.sink_config import SinkConfig


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
    from kafka_eos.txn.writer.records import Records
    records = Records(keys=[b"k", None], values=[b"v1", b"v2"], headers=[[("h", b"1")], None])
    topics, partitions = row_topics(records, "t"), row_partitions(records)
    keys, values, headers = row_columns(records)
    assert (topics, keys, values, partitions, headers) == (["t", "t"], [b"k", None], [b"v1", b"v2"], None,
                                                           [[("h", b"1")], None])


def test_arrow_headers_become_name_value_pairs(tmp_path):
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    rows = pa.record_batch({"value": ["a", "b"], "headers": pa.array([[{"key": "h", "value": b"1"}], []],
                                                                       pa.list_(header))})
    headers = row_columns(rows)[2]
    assert headers == [[("h", b"1")], None]


class _Err:
    def __init__(self, name: str, text: str) -> None:
        self._name, self._text = name, text

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return self._text


class _Msg:
    def __init__(self, key: bytes, size: int) -> None:
        self._key, self._value = key, b"x" * size

    def topic(self) -> str:
        return "out"

    def partition(self) -> int:
        return 2

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes:
        return self._value


class _Producer:
    """Serves the failed record's own delivery report at the first poll, as librdkafka may after
    the reports of the records it purged because of it."""

    def __init__(self, deliver) -> None:
        self.deliver = deliver

    def poll(self, timeout: float) -> int:
        if self.deliver:
            self.deliver(), setattr(self, "deliver", None)
        return 0


def test_the_failed_record_is_named_though_purged_records_were_reported_first(tmp_path):
    """The report of a 2 KB-limited topic under load (issue 47's run on 3 workers): 30 records
    purged (_PURGE_QUEUE) were reported before the one the broker refused (MSG_SIZE_TOO_LARGE); the
    error named 3 purged records only and not the cause, nor its fix (max.message.bytes)."""
    writer = KafkaWriter(_config(tmp_path), 0, 2)
    for i in range(30):
        writer._failures.delivered(_Err("_PURGE_QUEUE", "Local: Purged in queue"), _Msg(b"%d" % i, 4))
    too_large = _Err("MSG_SIZE_TOO_LARGE", "Broker: Message size too large")
    writer._producer = _Producer(lambda: writer._failures.delivered(too_large, _Msg(b"big", 8000)))
    reason = writer._failure()
    assert reason is not None and reason.startswith("record to out[2] (key=b'big', 8003 bytes) failed: Broker: "
                                                    "Message size too large (MSG_SIZE_TOO_LARGE)"), reason
    assert "max.message.bytes" in reason and reason.count("_PURGE_QUEUE") == 2, reason


class _TxnProducer:
    def __init__(self, settings: dict) -> None:
        self.settings, self.calls = settings, []

    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init_transactions")

    def begin_transaction(self) -> None:
        self.calls.append("begin_transaction")


@pytest.mark.parametrize("write_evidence", [True, False])
def test_write_evidence_false_keeps_the_transaction_and_records_no_evidence(tmp_path, write_evidence):
    from dataclasses import replace
    config = replace(_config(tmp_path), write_evidence=write_evidence)
    writer = KafkaWriter(config, 0, 0)
    writer._new_producer = _TxnProducer  # type: ignore[method-assign]
    producer = writer._open("t")
    assert producer.calls == ["init_transactions", "begin_transaction"]
    assert (writer._evidence is not None) is write_evidence


def test_a_partition_the_topic_lacks_is_named_with_its_fix():
    """librdkafka refuses such a record at produce() with a bare KafkaException (Local: Unknown
    partition); the sink's error names topic[partition], the key and the partition column."""
    from confluent_kafka import KafkaError, KafkaException

    from kafka_eos.txn.writer.flush import produce_refused
    refused = KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION, "Unable to produce message: Local: Unknown partition"))
    reason = produce_refused(refused, "out", 7, b"k1", b"v")
    assert reason.startswith("record to out[7] (key=b'k1', 1 bytes) failed: Unable to produce message"), reason
    assert "(_UNKNOWN_PARTITION)" in reason and "sink.partition_column" in reason, reason


class _Recording:
    """A producer that records what it is asked to produce (no broker: at-least-once, no transaction)."""

    def __init__(self) -> None:
        self.produced: list[dict] = []

    def produce(self, topic, value, key, partition, **extra) -> None:
        self.produced.append({"value": value, **extra})

    def poll(self, timeout) -> int:
        return 0


def test_each_records_create_time_is_its_rows_timestamp_and_a_null_row_the_tasks_clock(tmp_path):
    writer = KafkaWriter(_config(tmp_path), 0, 0)
    producer = _Recording()
    writer._producer = producer  # opened: the produce loop is what is under test
    rows = pa.record_batch({"value": [b"a", b"b", b"c"],
                            "timestamp": pa.array([1_700_000_000_123_456, None, 5_000], pa.timestamp("us", tz="UTC"))})
    writer._produce_batch(rows)
    times = [p.get("timestamp") for p in producer.produced]
    assert times[0] == 1_700_000_000_123 and times[2] == 5
    assert abs(times[1] - __import__("time").time() * 1000) < 60_000, "the null row: the task's clock"
    assert writer._earliest_ms == 5, "the smallest timestamp chosen: where verify begins to read"
    writer._produce_batch(pa.record_batch({"value": [b"d"]}))
    assert "timestamp" not in producer.produced[-1], "no column: librdkafka stamps the record"


def test_a_row_whose_timestamp_kafka_cannot_carry_fails_the_write_naming_the_batch(tmp_path):
    from kafka_eos.txn.writer.kafka_writer import KafkaWriteError
    writer = KafkaWriter(_config(tmp_path), 4, 0)
    rows = pa.record_batch({"key": [b"k"], "value": [b"a"], "timestamp": pa.array([-5], pa.int64())})
    with pytest.raises(KafkaWriteError, match=r"batch 4: row 0 \(key=b'k'\) has timestamp -5 ms"):
        writer.write([rows])
    assert writer._producer is None, "refused before a producer opened"


def test_a_copy_without_copy_timestamps_leaves_its_records_to_librdkafkas_clock(tmp_path):
    from dataclasses import replace

    from kafka_eos.txn.writer.records import Records
    for copy, want in ((True, [7, 8]), (False, [None, None])):
        writer = KafkaWriter(replace(_config(tmp_path), copy_timestamps=copy), 0, 0)
        producer = _Recording()
        writer._producer = producer
        writer._produce_batch(Records([None, None], [b"a", b"b"], timestamps=[7, 8]))
        assert [p.get("timestamp") for p in producer.produced] == want, copy
