"""Executor side: one offset range [start, end) of one Kafka partition, as its task's consumer
returns it.

Invariants:
- A range ends when the consumer *position* reaches ``end``, not when a record at end-1 is seen:
  the last offsets of a range may be transaction markers or aborted records, which have no
  record. Records at or beyond ``end`` are cut off; records below the next expected offset are
  dropped, so a range never yields an offset twice or outside [start, end).
- Offsets missing from Kafka (retention during the query) follow failOnDataLoss: raise
  ``KafkaDataLossError``, or warn and continue from the earliest available offset. A watermark
  lookup that fails or answers without offsets (a leader down) decides nothing: the task fails
  and Spark retries it. Only a partition Kafka says is unknown counts as gone.
- No progress for ``kafkaConsumer.pollTimeoutMs`` raises a TimeoutError naming the range.
"""
from __future__ import annotations

import bisect
import logging
import time
from typing import cast

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition as KafkaTP

from kafka_eos.connectors.source.options import SourceOptions
from kafka_eos.connectors.source.planning import apply_data_loss_policy
from kafka_eos.kafka_clients import request_s
from kafka_eos.offsets.data_loss import DataLossFinding, detect
from kafka_eos.offsets.ranges import OffsetRange

log = logging.getLogger(__name__)

WATERMARK_S = request_s("reader.watermarks")
_GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
_LOST = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE} | _GONE
_FATAL = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError._SSL,
          KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}


def offset_of(message: Message) -> int:
    """A data message's offset (confluent-kafka types offset() Optional: None only on error events)."""
    return cast(int, message.offset())


def check_error(err: KafkaError, where: object) -> None:
    """Raise a fatal or authorization error; log any other one (librdkafka retries it)."""
    if err.fatal() or err.code() in _FATAL:
        raise KafkaException(err)
    if err.code() != KafkaError._PARTITION_EOF:
        log.warning("transient Kafka error reading %s (retrying): %s", where, err)


class RangeReader:
    """A range's progress: what its task's consumer returned for its partition, cut to the range."""

    def __init__(self, rng: OffsetRange, options: SourceOptions, schema: pa.Schema | None) -> None:
        self.rng, self.options, self.schema = rng, options, schema
        self.ktp = KafkaTP(rng.topic, rng.partition)
        self.next_offset, self.progress_at = rng.start, time.monotonic()

    @property
    def done(self) -> bool:
        return self.next_offset >= self.rng.end

    def position(self) -> KafkaTP:
        """Where a consumer is assigned to read the rest of the range."""
        return KafkaTP(self.rng.topic, self.rng.partition, self.next_offset)

    def begin(self) -> None:
        """Reading starts: the no-progress clock starts here."""
        self._progress(self.next_offset)

    def accept(self, consumer: Consumer, messages: list[Message]) -> list[Message]:
        """This range's share of one consume, cut to [next offset, end); after accepted data loss
        the consumer is re-assigned past the gap."""
        resume = None
        if any(map(Message.error, messages)):
            messages, resume = self._errors(consumer, messages, self.next_offset)
        messages = self._within(messages, self.next_offset)
        if messages:
            self._progress(offset_of(messages[-1]) + 1)
        if resume is not None:  # data loss accepted (failOnDataLoss=false): jump over the gap
            self._progress(min(max(resume, self.next_offset), self.rng.end))
            if not self.done:  # a done range is unassigned by its task
                consumer.incremental_unassign([self.ktp])
                consumer.incremental_assign([self.position()])
        return messages

    def positioned(self, position: int) -> None:
        """The consumer's position after a consume that gave this range nothing: past the next
        offset means skipped transaction markers or aborted records; no move for too long fails."""
        if position > self.next_offset:
            self._progress(min(position, self.rng.end))
        elif time.monotonic() - self.progress_at > self.options.poll_timeout_ms / 1000:
            raise TimeoutError(
                f"reading {self.rng} from Kafka made no progress for {self.options.poll_timeout_ms} ms "
                f"(stuck at offset {self.next_offset}). Check broker health, or raise kafkaConsumer.pollTimeoutMs.")

    def _progress(self, next_offset: int) -> None:
        self.next_offset, self.progress_at = next_offset, time.monotonic()

    def _within(self, messages: list[Message], next_offset: int) -> list[Message]:
        """Only messages with next_offset <= offset < end (already in offset order)."""
        if not messages:
            return messages
        if offset_of(messages[0]) < next_offset or offset_of(messages[-1]) >= self.rng.end:
            return messages[bisect.bisect_left(messages, next_offset, key=offset_of):
                            bisect.bisect_left(messages, self.rng.end, key=offset_of)]
        return messages

    def _errors(self, consumer: Consumer, messages: list[Message], next_offset: int) -> tuple[list[Message], int | None]:
        """Split off error messages: return the good messages before the first data-loss error
        and, when the data-loss policy accepts the loss, the offset to resume from."""
        good: list[Message] = []
        for message in messages:
            err = message.error()
            if err is None:
                good.append(message)
            elif err.code() in _LOST:
                lost_at = max(next_offset, offset_of(good[-1]) + 1) if good else next_offset
                return good, self._data_loss(consumer, err, lost_at)
            else:
                check_error(err, self.rng)
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
