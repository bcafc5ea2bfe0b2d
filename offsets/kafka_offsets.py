"""Kafka metadata and offset lookups for the source driver (confluent-kafka AdminClient).

Invariants:
- ``latest`` is the last stable offset: ``list_offsets`` with READ_COMMITTED. A batch never
  ends past it, so every offset below a batch end belongs to a decided transaction (or none).
- Every lookup answers for exactly the partitions asked, or raises ``KafkaLookupError``
  naming them. An answer without an offset (librdkafka's ``OFFSET_INVALID``, seen while a
  partition's leader is down) is no answer: it is asked again, never returned as an offset.
  Likewise librdkafka's _NOENT "No leaders found" for partitions the metadata has (leader -1: a
  single broker fenced after a pause, or restarting) is LEADER_NOT_AVAILABLE, retried; for
  partitions it does not have (a deleted topic or partition) it is UNKNOWN_TOPIC_OR_PART, at once.
  Every lookup runs through ``offsets.lookup_retry.LookupRetry``: each retry uses a new
  AdminClient, so it asks the partition's current leader through a broker that answers
  (librdkafka's client kept asking a dead leader, or a hung broker whose connection stays up,
  until the lookup's deadline). One request waits at most ``request_s("source.list_offsets")``
  (10 s); transient failures (``kafka_clients.is_transient``: timeouts, transport errors, brokers
  down or hung, leader moves) are retried with backoff within ONE deadline per call
  (``timeout_s``, source option ``lookupTimeoutMs``, default 120 s); partitions already answered
  are not asked again. A non-transient error fails at once.
- A login the brokers refuse (wrong password, unknown user) is ``SourceLoginRefused`` naming the
  user and the mechanism, never the password: at once before any lookup of this object has
  answered, at the deadline after (``lookup_retry.LoginRefusals``).
- A source naming its topics (``subscribe``, ``assign``) asks for exactly those topics
  (DescribeTopics, never auto-creating): one its principal may not Describe or Read raises
  ``TopicAuthorizationError`` naming the ACL to add (Kafka leaves such topics out of an
  all-topics listing, which would read as empty); a topic that does not exist is left out, as a
  pattern's listing leaves it out.
- Nothing here reads committed consumer-group offsets: ``commit_group`` only writes them, for
  monitoring (lag tools); recovery always uses Spark's offset log.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from confluent_kafka import OFFSET_INVALID, IsolationLevel, KafkaError, KafkaException, TopicPartition as KafkaTP
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient, OffsetSpec

from kafka_eos.client_factory import AdminFactory, lookup_admin
from kafka_eos.kafka_clients import LOOKUP_DEADLINE_MS, PartialFailure, is_transient, request_s
from kafka_eos.offsets.acl_advice import AclMissingError, MissingAcl, principal_of
from kafka_eos.offsets.lookup_retry import FAILED as _FAILED
from kafka_eos.offsets.lookup_retry import KafkaLookupError as KafkaLookupError  # re-exported
from kafka_eos.offsets.lookup_retry import LookupRetry
from kafka_eos.offsets.lookup_retry import SourceLoginRefused as SourceLoginRefused  # re-exported
from kafka_eos.offsets.model import Offsets, TopicPartition, describe
from kafka_eos.offsets.subscription import Subscription


class TopicAuthorizationError(AclMissingError):
    """The source's principal may not Describe/Read a topic it names."""


def named_topics(subscription: Subscription | None) -> tuple[str, ...]:
    """The topics a subscription names (none for a pattern or no subscription)."""
    if subscription is None or subscription.kind == "subscribePattern":
        return ()
    return tuple(sorted(set(subscription.topics) | {t for t, _ in subscription.assigned}))


def named_listing(answers: Mapping[str, Sequence[int] | KafkaError], conf: Mapping[str, str]) -> dict[str, list[int]]:
    """topic -> sorted partitions from DescribeTopics answers (partition ids, or the topic's
    error). Unauthorized topics raise ``TopicAuthorizationError``; unknown topics are left out;
    any other error raises ``KafkaLookupError``."""
    denied = sorted(t for t, a in answers.items()
                    if isinstance(a, KafkaError) and a.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED)
    if denied:
        principal = principal_of(conf)
        raise TopicAuthorizationError([MissingAcl(principal, "topic", t, "Read") for t in denied],
                                      conf.get("bootstrap.servers", ""), "the kafka-eos source cannot read "
                                      f"{', '.join(denied)} (TOPIC_AUTHORIZATION_FAILED)")
    failed = {t: a for t, a in answers.items() if isinstance(a, KafkaError)
              and a.code() not in (KafkaError.UNKNOWN_TOPIC_OR_PART,)}
    if failed:
        raise KafkaLookupError("could not describe Kafka topics: " +
                               "; ".join(f"{t}: {e.name()}" for t, e in sorted(failed.items())))
    return {t: sorted(a) for t, a in answers.items() if not isinstance(a, KafkaError)}


_NO_OFFSET = "ListOffsets answered OFFSET_INVALID (no offset) for the partition"
_NO_LEADER = ("no partition asked has a leader now (librdkafka: {}); a broker being fenced or restarted "
              "leaves its partitions leaderless until it is back")


def _no_leaders(exc: BaseException) -> bool:
    """librdkafka's ListOffsets answers _NOENT ("Failed to query partition leaders: No leaders
    found"), without sending a request, when its metadata names no leader for any partition asked:
    partitions that do not exist (a deleted topic or partition), or that exist with leader -1 (a
    single broker fenced after a pause longer than its session timeout, the leaders' brokers down).
    ``_missing`` tells the two apart."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return isinstance(error, KafkaError) and error.code() == KafkaError._NOENT


def _unknown(tp: TopicPartition) -> KafkaException:
    return KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"{describe(tp)} does not exist"))


class KafkaOffsets:
    """Offsets and partitions of a cluster. ``conf`` is a librdkafka client configuration;
    ``new_admin`` builds each AdminClient (one at start, one per retry)."""

    def __init__(self, conf: Mapping[str, str], timeout_s: float = LOOKUP_DEADLINE_MS / 1000,
                 new_admin: AdminFactory = lookup_admin) -> None:
        self._conf = dict(conf)
        self._timeout_s = timeout_s
        self._lookups = LookupRetry(self._conf, timeout_s, new_admin)  # the AdminClient, its retries
        self._retrying = self._lookups.run

    @property
    def _admin(self) -> AdminClient:
        """The current AdminClient (a new one per retry)."""
        return self._lookups.admin

    def listing(self, subscription: Subscription | None = None) -> dict[str, list[int]]:
        """topic -> sorted partition ids: the topics ``subscription`` names (see ``named_listing``),
        else every topic Kafka lists without error."""
        named = named_topics(subscription)
        if named:
            return self._named(named)
        try:
            meta = self._retrying(lambda seconds: self._admin.list_topics(timeout=seconds), "source.list_topics")
        except _FAILED as exc:
            raise KafkaLookupError(f"could not list Kafka topics within {self._timeout_s:.0f}s: {exc!r}. Check "
                                   "kafka.bootstrap.servers and that the brokers are reachable.") from None
        return {name: sorted(t.partitions) for name, t in meta.topics.items() if t.error is None}

    def partitions(self, subscription: Subscription) -> set[TopicPartition]:
        return subscription.select(self.listing(subscription))

    def _named(self, topics: tuple[str, ...]) -> dict[str, list[int]]:
        def attempt(seconds: float) -> dict[str, list[int] | KafkaError]:
            futures = self._admin.describe_topics(TopicCollection(list(topics)), request_timeout=seconds,
                                                  include_authorized_operations=True)
            answers: dict[str, list[int] | KafkaError] = {}
            for name, future in futures.items():
                try:
                    found = future.result(seconds + 1.0)
                    ops = found.authorized_operations
                    readable = ops is None or AclOperation.READ in ops or AclOperation.ALL in ops
                    answers[name] = ([p.id for p in found.partitions] if readable
                                     else KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
                except KafkaException as exc:
                    error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                    if error is None or is_transient(exc):
                        raise
                    answers[name] = error
            return answers
        try:
            answers = self._retrying(attempt, "source.describe_topics")
        except _FAILED as exc:
            raise KafkaLookupError(f"could not describe Kafka topics {', '.join(topics)} within "
                                   f"{self._timeout_s:.0f}s: {exc!r}. Check kafka.bootstrap.servers and that the "
                                   "brokers are reachable.") from None
        return named_listing(answers, self._conf)

    def earliest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return self._list({tp: OffsetSpec.earliest() for tp in tps}, "earliest")

    def latest(self, tps: Iterable[TopicPartition]) -> Offsets:
        """Last stable offsets (read_committed end)."""
        return self._list({tp: OffsetSpec.latest() for tp in tps}, "latest (read_committed)")

    def high_watermarks(self, tps: Iterable[TopicPartition]) -> Offsets:
        """High watermarks (read_uncommitted end): past the last stable offset while a transaction
        on the partition is open."""
        return self._list({tp: OffsetSpec.latest() for tp in tps}, "latest (read_uncommitted)",
                          IsolationLevel.READ_UNCOMMITTED)

    def for_times(self, query: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        found = self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in query.items()}, "by timestamp")
        return {tp: (o if o >= 0 else None) for tp, o in found.items()}

    def commit_group(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Write ``offsets`` as ``group``'s committed offsets (monitoring only: one attempt)."""
        from confluent_kafka import ConsumerGroupTopicPartitions
        if not offsets:
            return
        timeout_s = request_s("source.commit_group")
        request = ConsumerGroupTopicPartitions(group, [KafkaTP(t, p, o) for (t, p), o in sorted(offsets.items())])
        futures = self._admin.alter_consumer_group_offsets([request], request_timeout=timeout_s)
        for future in futures.values():
            future.result(timeout_s)

    def _list(self, request: Mapping[TopicPartition, OffsetSpec], what: str,
              isolation: IsolationLevel = IsolationLevel.READ_COMMITTED) -> Offsets:
        pending = dict(request)
        out: Offsets = {}

        def attempt(seconds: float) -> Offsets:
            self._list_once(pending, out, seconds, isolation)
            return out
        if not pending:
            return out
        try:
            return self._retrying(attempt, "source.list_offsets")
        except PartialFailure as exc:
            listed = "; ".join(f"{describe(tp)}: {err!r}" for tp, err in sorted(exc.errors.items()))
        except _FAILED as exc:
            listed = f"{', '.join(describe(tp) for tp in sorted(pending))}: {exc!r}"
        raise KafkaLookupError(f"could not look up {what} offsets within {self._timeout_s:.0f}s of {listed}. "
                               "Check that the topics exist, their leaders are available and "
                               "kafka.bootstrap.servers is reachable.")

    def _list_once(self, pending: dict[TopicPartition, OffsetSpec], out: Offsets, seconds: float,
                   isolation: IsolationLevel) -> None:
        """One ListOffsets call for ``pending``; answered partitions move to ``out``."""
        futures = self._admin.list_offsets({KafkaTP(t, p): spec for (t, p), spec in pending.items()},
                                           isolation_level=isolation,
                                           request_timeout=seconds)
        errors: dict[TopicPartition, BaseException] = {}
        for ktp, future in futures.items():
            tp = (ktp.topic, ktp.partition)
            try:
                offset = future.result(seconds + 1.0).offset
            except _FAILED as exc:
                errors[tp] = exc
                continue
            if offset == OFFSET_INVALID:  # answered without an offset (its leader just went down): ask again
                errors[tp] = KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, _NO_OFFSET))
                continue
            out[tp] = offset
            pending.pop(tp, None)
        leaderless = [tp for tp, exc in errors.items() if _no_leaders(exc)]
        if leaderless:
            missing = self._missing(leaderless, seconds)
            errors.update({tp: _unknown(tp) if tp in missing else KafkaException(KafkaError(
                KafkaError.LEADER_NOT_AVAILABLE, _NO_LEADER.format(errors[tp]))) for tp in leaderless})
        if errors:
            raise PartialFailure(errors)

    def _missing(self, asked: Sequence[TopicPartition], seconds: float) -> set[TopicPartition]:
        """The partitions of ``asked`` the cluster's metadata does not have: UNKNOWN_TOPIC_OR_PART,
        not retried (a no-leader answer for existing ones is LEADER_NOT_AVAILABLE, retried)."""
        topics = self._admin.list_topics(timeout=seconds).topics

        def unknown(topic: str) -> bool:
            error = topics[topic].error if topic in topics else None
            return topic not in topics or (error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)
        return {(t, p) for t, p in asked if unknown(t) or p not in topics[t].partitions}
