"""ClaimTopic: the prefix claims on the cluster (a compacted topic of one partition, keyed by prefix).

Invariants enforced here:
- The topic is created when missing (1 partition, the broker's default replication,
  ``cleanup.policy=compact`` and ``min.compaction.lag.ms`` of a day, so the records of a race are
  still there when the racers compare them); it is never changed when it exists.
- Reading goes from the log start to the high watermark of the one partition at the time of the
  read, with no consumer group (assign, no commits; needs Read on the topic, no group ACL): the
  answer is the latest record per key.
- Writes are acknowledged by all in-sync replicas (idempotent producer, acks=all) and return the
  record's offset: the broker's order arbitrates a race (``prefix_claim.race_winner``).
- A principal not allowed to create, read or write the topic gets ``PrefixClaimAccessError`` with
  the ACLs or the admin command to fix it; nothing is skipped silently.
- A transient error (a topic just created has no leader yet, a leader move, a broker outage;
  ``kafka_clients.is_transient``) is retried until the call's timeout; only then, or at once for
  any other error, is ``PrefixClaimAccessError`` raised. A read's requests are bounded by
  ``kafka_clients.TIMEOUTS["sink.prefix_claim"]`` and each retry reads on a new consumer.
- Only connection and security settings of the sink's client settings are used; the clients
  come from ``clients`` (``QuietClients``: factories, by default ``kafka_eos.client_factory``'s
  builders logging librdkafka errors only).
"""
from __future__ import annotations

from typing import Callable, Mapping, TypeVar, cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kafka_eos.client_factory import QuietClients
from kafka_eos.kafka_clients import error_code, is_transient, request_s
from kafka_eos.txn.cluster.client_settings import CARRIED, is_security_key
from kafka_eos.txn.protocol.errors import PrefixClaimAccessError
from kafka_eos.txn.topics.prefix_claim import Claim

COMPACTION_LAG_MS = 24 * 3600 * 1000
REQUEST_S = request_s("sink.prefix_claim")
T = TypeVar("T")
_DENIED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED}
# the reader commits nothing and joins no group, but librdkafka looks up the coordinator of the
# group.id it insists on; a principal without a group ACL gets this error, which reading ignores
_NO_GROUP_NEEDED = {KafkaError.GROUP_AUTHORIZATION_FAILED}
# a topic just created is not yet in every broker's (nor the client's) metadata
_NOT_YET_KNOWN = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}


def _not_yet_readable(exc: BaseException) -> bool:
    """Transient, or not yet known to the broker asked (``ensure`` just created the topic)."""
    return is_transient(exc) or error_code(exc) in _NOT_YET_KNOWN


class ClaimTopic:
    def __init__(self, conf: Mapping[str, str], topic: str, timeout_s: float = 30.0,
                 clients: QuietClients = QuietClients()) -> None:
        self._conf = {k: v for k, v in conf.items() if k in CARRIED or is_security_key(k)}
        self.topic, self._timeout_s, self._clients = topic, timeout_s, clients

    def _retried(self, call: Callable[[], T], retry_on: Callable[[BaseException], bool], verb: str) -> T:
        """``call`` until it returns or fails otherwise than ``retry_on``, within the call's timeout;
        each attempt builds its own client (fresh metadata: a leader may have moved off a hung broker)."""
        try:
            for attempt in Retrying(retry=retry_if_exception(retry_on), stop=stop_after_delay(self._timeout_s),
                                    wait=wait_exponential(multiplier=0.1, max=2.0), reraise=True):
                with attempt:
                    return call()
        except KafkaException as exc:
            raise PrefixClaimAccessError.of_topic(self.topic, verb, str(exc.args[0] if exc.args else exc)) from None
        raise AssertionError("unreachable")  # Retrying either returns or re-raises

    def exists(self) -> bool:
        """Whether the topic exists (creates nothing); each attempt on a new client, as ``read``."""
        def look_up() -> bool:
            found = self._clients.admin(self._conf).list_topics(self.topic, timeout=REQUEST_S).topics.get(self.topic)
            return found is not None and found.error is None
        return self._retried(look_up, is_transient, "looked up")

    def ensure(self) -> None:
        """Create the topic if it does not exist."""
        if self.exists():
            return
        admin = self._clients.admin(self._conf)
        new = NewTopic(self.topic, num_partitions=1, replication_factor=-1,
                       config={"cleanup.policy": "compact", "min.compaction.lag.ms": str(COMPACTION_LAG_MS)})
        try:
            admin.create_topics([new], request_timeout=self._timeout_s)[self.topic].result(self._timeout_s)
        except KafkaException as exc:
            if error_code(exc) != KafkaError.TOPIC_ALREADY_EXISTS:
                raise PrefixClaimAccessError.of_topic(self.topic, "created", str(exc.args[0])) from None

    def read(self, prefix: str, start: int | None = None, end: int | None = None) -> tuple[list[Claim | None], int]:
        """(every record of key ``prefix`` in offsets [start, end) in log order, the end read to);
        defaults: from the log start to the high watermark now. A tombstone reads as None. Each
        attempt asks on a new consumer (fresh metadata: the partition's leader may have moved off
        a hung broker), each request bounded by ``REQUEST_S``, until the call's timeout."""
        return self._retried(lambda: self._read_once(prefix, start, end), _not_yet_readable, "read")

    def _read_once(self, prefix: str, start: int | None, end: int | None) -> tuple[list[Claim | None], int]:
        consumer = self._clients.consumer({**self._conf, "group.id": "kafka-eos-prefix-claims",
                                           "enable.auto.commit": "false", "enable.partition.eof": "true"})
        try:
            partition = TopicPartition(self.topic, 0)
            low, high = consumer.get_watermark_offsets(partition, timeout=REQUEST_S)
            end = high if end is None else end
            first = max(low, start or 0)
            if first >= end:
                return [], end
            consumer.assign([TopicPartition(self.topic, 0, first if first > low else OFFSET_BEGINNING)])
            return self._consume(consumer, prefix, end), end
        finally:
            consumer.close()

    def _consume(self, consumer: Consumer, prefix: str, end: int) -> list[Claim | None]:
        found: list[Claim | None] = []
        key = prefix.encode("utf-8")
        while True:
            msg = consumer.poll(REQUEST_S)
            if msg is None:   # its leader silent: transient, the next attempt asks on a new consumer
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"no record within {REQUEST_S:.0f} s"))
            error = msg.error()
            if error:
                if error.code() == KafkaError._PARTITION_EOF:
                    return found
                if error.code() in _NO_GROUP_NEEDED:
                    continue
                if error.code() in _DENIED or not error.retriable():
                    raise PrefixClaimAccessError.of_topic(self.topic, "read", error.str())
                continue
            offset = cast(int, msg.offset())  # a record (no error) has an offset; confluent-kafka types it Optional
            if offset >= end:
                return found
            if msg.key() == key:
                value = msg.value()
                found.append(None if value is None else Claim.from_json(value, f"{self.topic}@{offset}"))
            if offset >= end - 1:
                return found

    def write(self, prefix: str, claim: Claim | None) -> int:
        """Append ``claim`` (None: a tombstone) under key ``prefix``; the record's offset."""
        producer = self._clients.producer({**self._conf, "enable.idempotence": "true", "acks": "all"})
        delivered: list = []
        producer.produce(self.topic, key=prefix.encode("utf-8"),
                         value=None if claim is None else claim.to_json().encode("utf-8"),
                         on_delivery=lambda err, msg: delivered.append((err, msg)))
        producer.flush(self._timeout_s)
        if not delivered:
            raise PrefixClaimAccessError.of_topic(self.topic, "written", f"no acknowledgement within {self._timeout_s} s")
        err, msg = delivered[0]
        if err is not None:
            raise PrefixClaimAccessError.of_topic(self.topic, "written", err.str())
        return msg.offset()
