"""A task whose transaction fails stops at once and aborts its own transaction (fake producer)."""
from __future__ import annotations

import json
from types import SimpleNamespace
import time

import pyarrow as pa
import pytest
from confluent_kafka import KafkaException

from kafka_eos.txn.writer.flush import TransactionFailed, abort_own, client_wait_s, delivery_failure, flush_checked
from kafka_eos.txn.writer.kafka_writer import KafkaWriteError, KafkaWriter
from kafka_eos.txn.protocol.sink_config import SinkConfig


class FakeError:
    def __init__(self, name: str, text: str):
        self._name, self._text = name, text

    def name(self):
        return self._name

    def str(self):
        return self._text

    def fatal(self):
        return False


class FakeMessage:
    def __init__(self, topic, partition, key, value):
        self._t, self._p, self._k, self._v = topic, partition, key, value

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def key(self):
        return self._k

    def value(self):
        return self._v


class FakeProducer:
    """librdkafka as seen by the task: a record of ``fail_key`` fails with MSG_SIZE_TOO_LARGE and
    the transaction turns AbortableError; its queued records are then never sent (flush never
    drains). ``queue_full`` makes produce raise BufferError from then on."""
    instances: list["FakeProducer"] = []

    def __init__(self, settings, fail_key=b"big", queue_full=False, refuse_after_failure=False):
        self.settings, self.fail_key, self.queue_full = settings, fail_key, queue_full
        self.refuse_after_failure = refuse_after_failure  # the broker refused fail_key in the background
        self.state, self.queued, self.calls = "Init", [], []
        FakeProducer.instances.append(self)

    def init_transactions(self, timeout):
        self.calls.append(("init", timeout))
        self.state = "Ready"

    def begin_transaction(self):
        self.state = "InTransaction"

    def list_topics(self, topic, timeout):  # one partition: the task's evidence puts every record in 0
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions={0: None}, error=None)})

    def produce(self, topic, value, key, partition, **kwargs):
        if self.state == "AbortableError" and self.queue_full:
            raise BufferError("queue full")
        if self.refuse_after_failure and any(m.key() == self.fail_key for m in self.queued):
            self.state = "AbortableError"  # its delivery report waits for the next poll
            raise KafkaException(FakeError("_STATE", "Local: Erroneous state"))
        self.queued.append(FakeMessage(topic, 0 if partition < 0 else partition, key, value))

    def _serve(self):
        for msg in list(self.queued):
            if msg.key() == self.fail_key and self.state in ("InTransaction", "AbortableError"):
                self.state = "AbortableError"
                self.settings["on_delivery"](FakeError("MSG_SIZE_TOO_LARGE", "Broker: Message size too large"), msg)
                self.queued.remove(msg)
        if self.state == "InTransaction":
            self.queued.clear()
        self.settings["stats_cb"](json.dumps({"eos": {"txn_state": self.state, "producer_id": 1,
                                                     "producer_epoch": 0}}))

    def poll(self, timeout=0):
        self._serve()
        return 0

    def flush(self, timeout):
        self._serve()
        if self.queued:
            time.sleep(min(timeout, 0.01))
        return len(self.queued)

    def purge(self, **kwargs):
        self.calls.append(("purge", kwargs))
        self.queued.clear()

    def abort_transaction(self, timeout):
        self.calls.append(("abort", timeout))
        self.state = "Ready"


def _config(tmp_path) -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                      log_location=str(tmp_path / "log"), topic="t", transaction_timeout_ms=300_000)


@pytest.fixture
def producers():
    FakeProducer.instances = []
    return FakeProducer.instances


def writer_of(tmp_path, batch_id: int, sink_partition: int, new_producer=FakeProducer, **more) -> KafkaWriter:
    """A KafkaWriter whose producers are FakeProducers (its producer factory)."""
    return KafkaWriter(_config(tmp_path), batch_id, sink_partition, new_producer=new_producer, **more)


def _rows(*keys):
    return pa.record_batch({"key": [k for k in keys], "value": [b"v" * 10 for _ in keys]})


def _aborted(producer) -> bool:
    return any(call[0] == "abort" for call in producer.calls)


def test_a_failed_record_stops_the_flush_at_once_aborts_and_names_record_and_fix(tmp_path, producers):
    writer = writer_of(tmp_path, 3, 1)
    started = time.monotonic()
    with pytest.raises(KafkaWriteError) as raised:
        writer.write([_rows(b"a", b"big", b"c")])
    assert time.monotonic() - started < 5  # not client_wait_s (300 s)
    message = str(raised.value)
    assert "t[0]" in message and "key=b'big'" in message and "max.message.bytes" in message
    assert "MSG_SIZE_TOO_LARGE" in message and "p-1-1" in message
    assert _aborted(producers[0]) and writer._producer is None


def test_a_full_queue_of_a_failed_transaction_does_not_spin(tmp_path, producers):
    writer = writer_of(tmp_path, 0, 0, lambda settings: FakeProducer(settings, queue_full=True))
    with pytest.raises(KafkaWriteError, match="Message size too large"):
        writer.write([_rows(b"big", b"x"), _rows(b"y", b"z")])
    assert _aborted(producers[0])


def test_a_record_refused_after_an_async_failure_names_the_failed_record_not_the_refused_one(tmp_path, producers):
    """The broker refuses an oversized record while the task goes on producing: librdkafka refuses
    the next produce() with _STATE before the oversized record's delivery report is served. The
    error names the oversized record and its fix, not the 10-byte record produce() refused."""
    writer = writer_of(tmp_path, 0, 0, lambda settings: FakeProducer(settings, refuse_after_failure=True))
    with pytest.raises(KafkaWriteError) as raised:
        writer.write([_rows(b"a", b"big", b"small")])
    message = str(raised.value)
    assert "key=b'big'" in message and "max.message.bytes" in message, message
    assert "key=b'small'" not in message and _aborted(producers[0])


def test_input_rows_raising_abort_the_open_transaction_first(tmp_path, producers):
    def rows():
        yield _rows(b"a", b"b")
        raise ValueError("an upstream UDF failed on id 7")
    with pytest.raises(ValueError, match="upstream UDF"):
        writer_of(tmp_path, 0, 0).write(rows())
    assert _aborted(producers[0])


def test_a_bad_column_aborts_the_opened_transaction(tmp_path, producers):
    with pytest.raises(KafkaWriteError, match="'value' column"):
        writer_of(tmp_path, 0, 0).write([_rows(b"a"), pa.record_batch({"v": [1]})])
    assert _aborted(producers[0])


def test_a_bad_first_batch_opens_no_producer(tmp_path, producers):
    with pytest.raises(KafkaWriteError, match="'value' column"):
        writer_of(tmp_path, 0, 0).write([pa.record_batch({"v": [1]})])
    assert producers == []                       # the columns are read before the producer opens


def test_a_successful_write_is_not_aborted(tmp_path, producers):
    handle = writer_of(tmp_path, 0, 2).write([_rows(b"a", b"b")])
    assert handle.records == 2 and handle.transactional_id == "p-2-0" and not _aborted(producers[0])


def test_a_batch_decided_during_the_flush_aborts_the_attempts_own_transaction(tmp_path, producers):
    from kafka_eos.txn.writer.kafka_writer import StaleAttemptError
    answers = iter([False, True, True])  # not decided before init_transactions; decided after the flush
    writer = writer_of(tmp_path, 4, 0, decided=lambda: next(answers))
    with pytest.raises(StaleAttemptError, match="after flush"):
        writer.write([_rows(b"a")])
    assert _aborted(producers[0]) and not producers[0].queued


def test_the_handle_carries_the_producer_id_and_epoch_of_the_open_transaction(tmp_path, producers):
    writer = writer_of(tmp_path, 0, 1)
    handle = writer.write([_rows(b"a", b"b", b"c")])
    assert (handle.producer_id, handle.producer_epoch, handle.records) == (1, 0, 3)
    assert handle.sink_partition == 1 and producers[0].state == "InTransaction" and writer._producer is None


def test_flush_checked_returns_at_the_first_failure_without_waiting():
    answers = iter([None, None, "record failed"])
    flushed = []
    with pytest.raises(TransactionFailed, match="record failed"):
        flush_checked(lambda t: flushed.append(t) or 5, lambda: next(answers), timeout_s=300, step_s=0.01)
    assert len(flushed) == 3 and max(flushed) <= 0.01


def test_flush_checked_stops_at_its_deadline_and_when_drained():
    now = [0.0]

    def flush(t):
        now[0] += t
        return 4
    assert flush_checked(flush, lambda: None, timeout_s=1.0, step_s=0.25, clock=lambda: now[0]) == 4
    assert now[0] == pytest.approx(1.0)
    assert flush_checked(lambda t: 0, lambda: None, timeout_s=1.0) == 0


def test_abort_own_never_raises_and_says_why():
    class Broken:
        def purge(self, **kwargs):
            raise RuntimeError("purge failed")

        def abort_transaction(self, timeout):
            raise RuntimeError("fatal: fenced")
    assert "fenced" in abort_own(Broken(), transactional=True)
    assert abort_own(Broken(), transactional=False) is None


def test_one_named_wait_for_client_calls_and_a_fix_per_error():
    assert client_wait_s(10_000) == 30.0 and client_wait_s(900_000) == 900.0
    line = delivery_failure("orders", 2, b"k1", 8123, "MSG_SIZE_TOO_LARGE", "Broker: Message size too large")
    assert "orders[2]" in line and "8123 bytes" in line and "max.message.bytes" in line and "orders" in line
    assert "see the broker log for topic orders" in delivery_failure("orders", 0, None, 1, "X", "x")
