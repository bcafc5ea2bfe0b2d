"""Kafka metadata and offset lookups for the source driver (confluent-kafka AdminClient).

Invariants:
- ``latest`` is the last stable offset: ``list_offsets`` with READ_COMMITTED. A batch never
  ends past it, so every offset below a batch end belongs to a decided transaction (or none).
- Every lookup answers for exactly the partitions asked, or raises ``KafkaLookupError``
  naming them; transient (retriable) broker errors are retried until the timeout.
- Nothing here reads committed consumer-group offsets: ``commit_group`` only writes them, for
  monitoring (lag tools); recovery always uses Spark's offset log.
"""
from __future__ import annotations

import time
from typing import Iterable, Mapping

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition as KafkaTP
from confluent_kafka.admin import AdminClient, OffsetSpec

from offsets.model import Offsets, TopicPartition, describe
from offsets.subscription import Subscription


class KafkaLookupError(RuntimeError):
    """Kafka did not answer a metadata or offset lookup."""


class KafkaOffsets:
    """Offsets and partitions of a cluster. ``conf`` is a librdkafka client configuration."""

    def __init__(self, conf: Mapping[str, str], timeout_s: float = 30.0) -> None:
        self._admin = AdminClient(dict(conf))
        self._timeout_s = timeout_s

    def listing(self) -> dict[str, list[int]]:
        """topic -> sorted partition ids, for every topic Kafka lists without error."""
        try:
            meta = self._admin.list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            raise KafkaLookupError(f"could not list Kafka topics: {exc}. Check kafka.bootstrap.servers "
                                   "and that the brokers are reachable.") from None
        return {name: sorted(t.partitions) for name, t in meta.topics.items() if t.error is None}

    def partitions(self, subscription: Subscription) -> set[TopicPartition]:
        return subscription.select(self.listing())

    def earliest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return self._list({tp: OffsetSpec.earliest() for tp in tps}, "earliest")

    def latest(self, tps: Iterable[TopicPartition]) -> Offsets:
        """Last stable offsets (read_committed end)."""
        return self._list({tp: OffsetSpec.latest() for tp in tps}, "latest (read_committed)")

    def for_times(self, query: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        found = self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in query.items()}, "by timestamp")
        return {tp: (o if o >= 0 else None) for tp, o in found.items()}

    def commit_group(self, group: str, offsets: Mapping[TopicPartition, int], timeout_s: float = 5.0) -> None:
        """Write ``offsets`` as ``group``'s committed offsets (monitoring only)."""
        from confluent_kafka import ConsumerGroupTopicPartitions
        if not offsets:
            return
        request = ConsumerGroupTopicPartitions(group, [KafkaTP(t, p, o) for (t, p), o in sorted(offsets.items())])
        futures = self._admin.alter_consumer_group_offsets([request], request_timeout=timeout_s)
        for future in futures.values():
            future.result(timeout_s)

    def _list(self, request: Mapping[TopicPartition, OffsetSpec], what: str) -> Offsets:
        pending = dict(request)
        out: Offsets = {}
        if not pending:
            return out
        deadline = time.monotonic() + self._timeout_s
        while pending:
            futures = self._admin.list_offsets({KafkaTP(t, p): spec for (t, p), spec in pending.items()},
                                               isolation_level=IsolationLevel.READ_COMMITTED,
                                               request_timeout=self._timeout_s)
            failed: dict[TopicPartition, str] = {}
            retriable = True
            for ktp, future in futures.items():
                tp = (ktp.topic, ktp.partition)
                try:
                    out[tp] = future.result(self._timeout_s).offset
                    pending.pop(tp, None)
                except KafkaException as exc:
                    failed[tp] = str(exc)
                    retriable = retriable and exc.args[0].retriable()
            if not failed:
                break
            if not retriable or time.monotonic() > deadline:
                listed = "; ".join(f"{describe(tp)}: {err}" for tp, err in sorted(failed.items()))
                raise KafkaLookupError(f"could not look up {what} offsets of {listed}. Check that the "
                                       "topics exist and the brokers are reachable.")
            time.sleep(0.2)
        return out
