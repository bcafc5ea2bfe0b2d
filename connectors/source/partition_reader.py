"""Executor side: read one offset range [start, end) of one Kafka partition as Arrow batches.

Invariants:
- The consumer is assigned and seeks (no group subscription, no commits) and reads with
  ``isolation.level=read_committed``: aborted records are never returned.
- It stops when the consumer *position* reaches ``end``, not when a record at end-1 is seen:
  the last offsets of a range may be transaction markers or aborted records, which have no
  record. Records at or beyond ``end`` are cut off; records below the next expected offset are
  dropped, so a range never yields an offset twice or outside [start, end).
- Offsets missing from Kafka (retention during the query) follow failOnDataLoss: raise
  ``KafkaDataLossError``, or warn and continue from the earliest available offset. A watermark
  lookup that fails or answers without offsets (a leader down) decides nothing: the task fails
  and Spark retries it. Only a partition Kafka says is unknown counts as gone.
- No progress for ``kafkaConsumer.pollTimeoutMs`` raises a TimeoutError naming the range.
- The consumer comes from ``new_consumer`` (``kafka_eos.client_factory.consumer`` by default).
"""
from __future__ import annotations

import bisect
import logging
import time
from typing import Callable, Iterable, Iterator, TypeVar, cast

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition as KafkaTP

from kafka_eos import client_factory
from kafka_eos.client_factory import ConsumerFactory
from kafka_eos.connectors.source.arrow_rows import to_record_batches
from kafka_eos.kafka_clients import request_s
from kafka_eos.connectors.source.options import SourceOptions
from kafka_eos.connectors.source.planning import apply_data_loss_policy, task_ranges
from kafka_eos.offsets.data_loss import DataLossFinding, detect
from kafka_eos.offsets.ranges import OffsetRange

log = logging.getLogger(__name__)
T = TypeVar("T")

BATCH_RECORDS = 20_000  # ~2 MB of 100-byte records: measured fastest (cache-sized Arrow batches)
# librdkafka's consume returns when it holds the asked count or at this timeout. A range that ends
# at the partition's end on a transaction marker never gets its count (the marker is no record),
# so each such range waited the whole slice: 100 ms before (4 ranges of 500 records: 407 -> 46 ms).
POLL_SLICE_S = 0.01
WATERMARK_S = request_s("reader.watermarks")
_GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
_LOST = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE} | _GONE
_FATAL = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError._SSL,
          KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}


def _offset(message: Message) -> int:
    """A data message's offset (confluent-kafka types offset() Optional: None only on error events)."""
    return cast(int, message.offset())


def read_partition(partition: object, options: SourceOptions, schema: pa.Schema,
                   new_consumer: ConsumerFactory = client_factory.consumer) -> Iterator[pa.RecordBatch]:
    """Batches of the partition's ranges, one range after the other (nothing for the placeholder
    partition Spark may send)."""
    return _read_ranges(_readers(task_ranges(partition), options, schema, new_consumer))


def read_messages(ranges: Iterable[OffsetRange], options: SourceOptions,
                  new_consumer: ConsumerFactory = client_factory.consumer) -> Iterator[list[Message]]:
    """The records of ``ranges`` as lists of confluent-kafka messages (the sink's own read of
    ``emit=offsetRanges`` input), under the same rules as ``read_partition``."""
    return _read_ranges(_readers(ranges, options, None, new_consumer), RangeReader.messages)


def _readers(ranges: Iterable[OffsetRange], options: SourceOptions, schema: pa.Schema | None,
             new_consumer: ConsumerFactory) -> list["RangeReader"]:
    """A reader per non-empty range."""
    return [RangeReader(r, options, schema, new_consumer) for r in ranges if isinstance(r, OffsetRange) and r.size > 0]


def _batches(reader: "RangeReader") -> Iterator:
    return reader.batches()


def _read_ranges(readers: list["RangeReader"], read: Callable[["RangeReader"], Iterator[T]] = _batches) -> Iterator[T]:
    """One range after the other; the next range's consumer opens (librdkafka starts fetching)
    while the current range is read, so a group's ranges do not each wait for a first fetch."""
    try:
        for i, reader in enumerate(readers):
            if i + 1 < len(readers):
                readers[i + 1].open()
            yield from read(reader)
    finally:
        for reader in readers:
            reader.close()


class RangeReader:
    def __init__(self, rng: OffsetRange, options: SourceOptions, schema: pa.Schema | None,
                 new_consumer: ConsumerFactory = client_factory.consumer) -> None:
        self.rng, self.options, self.schema = rng, options, schema
        self.ktp = KafkaTP(rng.topic, rng.partition)
        self._new_consumer = new_consumer
        self._consumer: Consumer | None = None

    def open(self) -> Consumer:
        """The range's consumer, assigned at the range's start (created once)."""
        if self._consumer is None:
            consumer = self._new_consumer(self.options.consumer_conf())
            try:
                consumer.assign([KafkaTP(self.rng.topic, self.rng.partition, self.rng.start)])
            except BaseException:
                consumer.close()
                raise
            self._consumer = consumer
        return self._consumer

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The range as Arrow batches of the source schema."""
        assert self.schema is not None, "a reader of Arrow batches is built with the source schema"
        for messages in self.messages():
            yield from to_record_batches(messages, self.rng.topic, self.rng.partition, self.schema)

    def messages(self) -> Iterator[list[Message]]:
        """The range's records in offset order, in lists of at most ``BATCH_RECORDS``."""
        rng = self.rng
        consumer = self.open()
        try:
            next_offset, progress_at = rng.start, time.monotonic()
            while next_offset < rng.end:
                messages = consumer.consume(num_messages=min(BATCH_RECORDS, rng.end - next_offset), timeout=POLL_SLICE_S)
                resume = None
                if messages and any(map(Message.error, messages)):
                    messages, resume = self._errors(consumer, messages, next_offset)
                messages = self._within(messages, next_offset)
                if messages:
                    yield messages
                    next_offset, progress_at = _offset(messages[-1]) + 1, time.monotonic()
                if resume is not None:  # data loss accepted (failOnDataLoss=false): jump over the gap
                    if resume >= rng.end:
                        return
                    next_offset, progress_at = max(resume, next_offset), time.monotonic()
                    consumer.assign([KafkaTP(rng.topic, rng.partition, next_offset)])
                    continue
                if next_offset >= rng.end:
                    return
                position = consumer.position([self.ktp])[0].offset
                if position > next_offset:  # skipped transaction markers / aborted records
                    next_offset, progress_at = position, time.monotonic()
                elif time.monotonic() - progress_at > self.options.poll_timeout_ms / 1000:
                    raise TimeoutError(
                        f"reading {rng} from Kafka made no progress for {self.options.poll_timeout_ms} ms "
                        f"(stuck at offset {next_offset}). Check broker health, or raise kafkaConsumer.pollTimeoutMs.")
        finally:
            self.close()

    def _within(self, messages: list[Message], next_offset: int) -> list[Message]:
        """Only messages with next_offset <= offset < end (already in offset order)."""
        if not messages:
            return messages
        if _offset(messages[0]) < next_offset or _offset(messages[-1]) >= self.rng.end:
            offsets = cast(list[int], [m.offset() for m in messages])  # data messages: each has an offset
            return messages[bisect.bisect_left(offsets, next_offset): bisect.bisect_left(offsets, self.rng.end)]
        return messages

    def _errors(self, consumer: Consumer, messages: list[Message], next_offset: int) -> tuple[list[Message], int | None]:
        """Split off error messages: return the good messages before the first data-loss error
        and, when the data-loss policy accepts the loss, the offset to resume from."""
        good: list[Message] = []
        for message in messages:
            err = message.error()
            if err is None:
                good.append(message)
                continue
            if err.code() in _LOST:
                lost_at = max(next_offset, _offset(good[-1]) + 1) if good else next_offset
                return good, self._data_loss(consumer, err, lost_at)
            if err.fatal() or err.code() in _FATAL:
                raise KafkaException(err)
            if err.code() != KafkaError._PARTITION_EOF:
                log.warning("transient Kafka error reading %s (retrying): %s", self.rng, err)
        return good, None

    def _data_loss(self, consumer: Consumer, err: KafkaError, next_offset: int) -> int:
        rng = self.rng
        try:
            low, high = consumer.get_watermark_offsets(self.ktp, timeout=WATERMARK_S, cached=False)
        except KafkaException as exc:
            if not (exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() in _GONE):
                raise  # a leader down or a timeout decides nothing: the task fails and Spark retries it
            findings = [DataLossFinding("partition-gone", rng.topic, rng.partition, next_offset, None, None)]
        else:
            if min(low, high) < 0:  # an answer without offsets (a leader down) decides nothing either
                raise KafkaException(err)
            findings = detect({rng.tp: next_offset}, [rng.tp], {rng.tp: low}, {rng.tp: high})
        if not findings:
            raise KafkaException(err)
        apply_data_loss_policy(findings, self.options.fail_on_data_loss)
        finding = findings[0]
        if finding.kind != "offsets-deleted" or finding.resume_at is None:
            return rng.end  # offsets went backwards or the partition is gone: nothing left in this range
        return finding.resume_at
