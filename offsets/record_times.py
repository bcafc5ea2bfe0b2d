"""Record timestamps for event-time alignment: the head record of partitions (read_committed consumer).

Invariants:
- ``heads(starts)`` answers every partition asked: (offset, Kafka record timestamp) of the first
  committed record at or after its start, or None when there is none below the last stable
  offset (only aborted records and markers, or nothing). Aborted records and markers are
  skipped by the read_committed consumer, never reported.
- One consumer per ``RecordTimes``, reused across calls (re-assigned at the asked offsets); a
  call fetches until every partition gave a record or reached its end, within ``timeout_s``,
  else raises ``KafkaLookupError`` naming the partitions without an answer. Fetches are kept
  small (``max.partition.fetch.bytes``): only the first record of each partition is used.
- Nothing is committed: the consumer never auto-commits and never resets offsets.
"""
from __future__ import annotations

import time
import uuid
from typing import Mapping

from confluent_kafka import Consumer, KafkaError, TopicPartition as KafkaTP

from kafka_eos import client_factory
from kafka_eos.client_factory import ConsumerFactory
from kafka_eos.offsets.kafka_offsets import KafkaLookupError
from kafka_eos.offsets.model import TopicPartition, describe

Head = tuple[int, int]
_PERMANENT = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE,
              KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART}  # other errors: retried until the deadline
_SMALL_FETCH = {"max.partition.fetch.bytes": "65536", "fetch.max.bytes": "1048576",
                "queued.min.messages": "1", "fetch.wait.max.ms": "10"}


class RecordTimes:
    """Head records of partitions. ``conf`` is a librdkafka client configuration (no group
    settings); ``new_consumer`` builds the one consumer."""

    def __init__(self, conf: Mapping[str, str], timeout_s: float = 30.0,
                 new_consumer: ConsumerFactory = client_factory.consumer) -> None:
        self._conf = {**_SMALL_FETCH, **dict(conf), "group.id": f"kafka-eos-align-{uuid.uuid4().hex}",
                      "isolation.level": "read_committed", "enable.auto.commit": "false",
                      "enable.auto.offset.store": "false", "auto.offset.reset": "error",
                      "enable.partition.eof": "true"}
        self._timeout_s = timeout_s
        self._new_consumer = new_consumer
        self._consumer: Consumer | None = None
        self.polls = 0  # poll calls made, for measurements

    def heads(self, starts: Mapping[TopicPartition, int]) -> dict[TopicPartition, Head | None]:
        if not starts:
            return {}
        consumer = self._consumer or self._new_consumer(self._conf)
        self._consumer = consumer
        consumer.assign([KafkaTP(t, p, o) for (t, p), o in sorted(starts.items())])
        answers: dict[TopicPartition, Head | None] = {}
        deadline = time.monotonic() + self._timeout_s
        try:
            while len(answers) < len(starts) and time.monotonic() < deadline:
                self.polls += 1
                for msg in consumer.consume(num_messages=1000, timeout=0.05):  # returns at the timeout
                    self._take(msg, starts, answers)
        finally:
            consumer.unassign()
        missing = sorted(set(starts) - set(answers))
        if missing:
            raise KafkaLookupError(f"could not read the head record of {', '.join(map(describe, missing))} "
                                   f"within {self._timeout_s:.0f}s (event-time alignment). Check that the "
                                   "brokers are reachable and the partitions' leaders available.")
        return answers

    @staticmethod
    def _take(msg, starts: Mapping[TopicPartition, int], answers: dict[TopicPartition, Head | None]) -> None:
        tp = (msg.topic(), msg.partition())
        if tp not in starts or tp in answers:
            return
        error = msg.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                if msg.offset() >= starts[tp]:  # an end reached by an earlier assignment is stale
                    answers[tp] = None
                return
            if error.fatal() or error.code() in _PERMANENT:
                raise KafkaLookupError(f"reading the head record of {describe(tp)} failed: {error.str()}")
            return
        if msg.offset() >= starts[tp]:
            answers[tp] = (msg.offset(), msg.timestamp()[1])

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
