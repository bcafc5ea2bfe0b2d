"""The Kafka record store's view of its topic: which records are live, read to the last stable offset.

Invariants:
- A record's key is ``<folder>/<name>`` (``record_key``; the root folder ``""`` keys by the name
  alone); folders are ``/``-separated, with no empty, ``.`` or ``..`` part. A store opened on one
  folder sees the names directly in it and its sub-folders' first parts, as a directory listing
  would (``RecordIndex.names``); names starting with ``.`` are not listed.
- ``RecordIndex`` keeps, per key, the offset and value of the newest record applied (a tombstone:
  None). A record older than the one kept is ignored, so a writer that applies its own record at
  once and reads it again from the topic later never goes back (a re-created key stays created).
- ``TopicTail`` reads partition 0 with a ``read_committed`` consumer (assigned, no group, nothing
  committed) up to the last stable offset asked for at each ``refresh``, then stops: aborted
  records never reach the index, records of a transaction still open are not read yet. The
  consumer and its position are kept, so each refresh reads only what is new (the last stable
  offset is asked of an admin client: the consumer's connection may be holding a fetch). It
  creates nothing: a missing topic reads as empty (asked again at the next refresh). A refresh
  that cannot read the stable records raises (``TimeoutError``), never leaves a stale view.
- ``ensure_topic`` (writers only) creates the topic when absent: compact, one partition,
  replication min(3, brokers), min.insync.replicas one below it (at least 1), max.message.bytes
  ``BATCH_BYTES``; a topic that exists is left as it is.
- Clients come from ``kafka_eos.client_factory`` (``QuietClients``), given only the connection
  and security settings (``connection_settings``); an error shows no setting's value.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, cast

from confluent_kafka import (OFFSET_BEGINNING, IsolationLevel, KafkaError, KafkaException, Message,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kafka_eos.client_factory import ConsumerFactory, QuietClients
from kafka_eos.kafka_clients import REQUEST_S, admin_settings, data_settings, error_code, is_transient, kafka_error
from kafka_eos.secrets import redact_pairs
from kafka_eos.txn.cluster.client_settings import CARRIED, is_security_key
from kafka_eos.txn.protocol.errors import SinkLogError

# the reader joins no group and commits nothing, but librdkafka asks the coordinator of the
# group.id it insists on: a principal without a group ACL gets this error, which reading ignores
_NO_GROUP_NEEDED = {KafkaError.GROUP_AUTHORIZATION_FAILED}
_MISSING = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
READER_GROUP = "kafka-eos-store-reader"
RECORD_MAX_BYTES = 4 * 1024 * 1024
BATCH_BYTES = RECORD_MAX_BYTES + 64 * 1024  # the topic's max.message.bytes: a record, its key, the batch overhead
OPEN_S = 30.0  # a topic just created becomes readable within this
# Reading past a transaction's commit marker (never delivered) takes an empty fetch: up to this
# long. (A broker answers one request of a connection at a time, so the consumer's waiting fetch
# would hold back a ListOffsets on its connection: the admin client asks that.)
FETCH_WAIT_MS = 50


def folder_of(folder: str) -> str:
    """``folder`` without leading or trailing ``/``; ``ValueError`` for an empty, ``.`` or ``..`` part."""
    stripped = folder.strip("/")
    if stripped and any(part in ("", ".", "..") for part in stripped.split("/")):
        raise ValueError(f"store folder {folder!r}: use names separated by single '/' (no '.' or '..')")
    return stripped


def record_key(folder: str, name: str) -> str:
    """The key of record ``name`` in ``folder`` (normalized by ``folder_of``)."""
    if not name or name.startswith("/") or name.endswith("/"):
        raise ValueError(f"store record name {name!r}: use a non-empty name without a leading or trailing '/'")
    return "/".join(p for p in (folder_of(folder), folder_of(name)) if p)


@dataclass
class RecordIndex:
    """The live records of the topic: key -> (offset, value); a tombstone is kept as None."""
    records: dict[str, tuple[int, bytes | None]] = field(default_factory=dict)

    def apply(self, key: str, value: bytes | None, offset: int) -> None:
        kept = self.records.get(key)
        if kept is None or kept[0] < offset:
            self.records[key] = (offset, value)

    def get(self, key: str) -> bytes | None:
        kept = self.records.get(key)
        return None if kept is None else kept[1]

    def live_keys(self) -> list[str]:
        return [key for key, (_, value) in self.records.items() if value is not None]

    def exists(self, key: str) -> bool:
        """A record, or a folder holding one (as a directory exists)."""
        return self.get(key) is not None or any(k.startswith(key + "/") for k in self.live_keys())

    def names(self, folder: str) -> list[str]:
        """The names directly in ``folder`` and the first parts of its sub-folders, sorted."""
        head = folder_of(folder)
        start = f"{head}/" if head else ""
        found = {key[len(start):].split("/", 1)[0] for key in self.live_keys() if key.startswith(start)}
        return sorted(name for name in found if name and not name.startswith("."))


def connection_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """Only the settings that say where and as whom to connect (producer tuning is the store's)."""
    return {k: str(v) for k, v in conf.items() if k in CARRIED or is_security_key(k)}


def _shown(exc: BaseException) -> str:
    error = kafka_error(exc)
    return redact_pairs(error.str() if error is not None else str(exc))


class TopicTail:
    """Partition 0 of ``topic`` read into ``index`` up to the last stable offset, incrementally."""

    def __init__(self, conf: Mapping[str, str], topic: str, new_consumer: ConsumerFactory,
                 admin: AdminClient) -> None:
        self.topic, self.index, self._admin = topic, RecordIndex(), admin
        self._partition = TopicPartition(topic, 0)
        self._consumer = new_consumer({**conf, "group.id": READER_GROUP, "enable.auto.commit": "false",
                                       "enable.partition.eof": "true", "isolation.level": "read_committed",
                                       "fetch.wait.max.ms": str(FETCH_WAIT_MS), "allow.auto.create.topics": "false"})
        self._assigned = False
        self.read_to = 0  # every record below this offset is in the index (or was aborted)
        self.refreshed_at = float("-inf")

    def close(self) -> None:
        self._consumer.close()

    def exists(self) -> bool:
        """Whether the topic exists (asks the broker; creates nothing)."""
        found = self._consumer.list_topics(self.topic, timeout=REQUEST_S).topics.get(self.topic)
        return found is not None and found.error is None and 0 in found.partitions

    def stable_end(self) -> int | None:
        """The last stable offset now (None: no such topic)."""
        asked = self._admin.list_offsets({self._partition: OffsetSpec.latest()}, request_timeout=REQUEST_S,
                                         isolation_level=IsolationLevel.READ_COMMITTED)
        try:
            return cast(int, asked[self._partition].result(REQUEST_S).offset)
        except KafkaException as exc:
            if error_code(exc) in _MISSING:
                return None
            raise

    def refresh(self) -> None:
        """Read what was committed since the last refresh (nothing for a missing topic)."""
        if not self._assigned and not self.exists():
            self.refreshed_at = time.monotonic()
            return
        end = self.stable_end()
        if end is not None and not self.read_until(end, REQUEST_S):
            raise TimeoutError(f"kafka-eos store topic {self.topic}: its records below offset {end} were not "
                               f"read within {REQUEST_S:.0f} s (read to {self.read_to})")
        self.refreshed_at = time.monotonic()

    def read_until(self, end: int, wait_s: float) -> bool:
        """Read until every record below ``end`` is in the index; False if ``wait_s`` passed with
        nothing new (the records up to ``end`` are not stable yet)."""
        if self.read_to >= end:
            return True
        if not self._assigned:
            self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            self._assigned = True
        while self.read_to < end:
            msg = self._consumer.poll(wait_s)
            if msg is None:
                return False
            self._take(msg)
        return True

    def read_own(self, offset: int, wait_s: float) -> bool:
        """Read up to the record this process's writer committed at ``offset``; when the last
        stable offset is then ``offset + 2``, the offset between is that transaction's marker and
        the view is at the end without waiting for an empty fetch. False: not readable in ``wait_s``."""
        if not self.read_until(offset + 1, wait_s):
            return False
        if self.read_to == offset + 1 and self.stable_end() == offset + 2:
            self.read_to = offset + 2
        return True

    def _take(self, msg: Message) -> None:
        error = msg.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                self.read_to = max(self.read_to, cast(int, msg.offset()))
            elif error.code() not in _NO_GROUP_NEEDED:
                raise KafkaException(error)
            return
        offset = cast(int, msg.offset())
        key = msg.key()
        if key is not None:
            self.index.apply(key.decode("utf-8"), msg.value(), offset)
        self.read_to = max(self.read_to, offset + 1)


def _not_yet_readable(exc: BaseException) -> bool:
    error = kafka_error(exc)
    return is_transient(exc) or (error is not None and error.code() in _MISSING)


def open_tail(conf: Mapping[str, str], topic: str, clients: QuietClients, wait_s: float = 0.0) -> TopicTail:
    """A tail of ``topic`` read to its last stable offset; ``wait_s``: retry a topic not yet readable."""
    settings = connection_settings(conf)
    tail = TopicTail(data_settings(settings), topic, clients.consumer, clients.admin(admin_settings(settings)))
    for attempt in Retrying(retry=retry_if_exception(_not_yet_readable), stop=stop_after_delay(wait_s),
                            wait=wait_exponential(multiplier=0.05, max=1.0), reraise=True):
        with attempt:
            tail.refresh()
    return tail


def ensure_topic(conf: Mapping[str, str], topic: str, clients: QuietClients) -> None:
    """Create ``topic`` when absent (see the module's invariants); an existing one is left as it is."""
    admin = clients.admin(admin_settings(connection_settings(conf)))
    meta = admin.list_topics(timeout=REQUEST_S)
    found = meta.topics.get(topic)
    if found is not None and found.error is None:
        return
    replication = min(3, max(1, len(meta.brokers)))
    new = NewTopic(topic, num_partitions=1, replication_factor=replication,
                   config={"cleanup.policy": "compact", "max.message.bytes": str(BATCH_BYTES),
                           "min.insync.replicas": str(max(1, replication - 1))})
    try:
        admin.create_topics([new], request_timeout=REQUEST_S)[topic].result(REQUEST_S)
    except KafkaException as exc:
        error = kafka_error(exc)
        if error is None or error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise SinkLogError(f"kafka-eos's record store topic {topic!r} could not be created: {_shown(exc)}. "
                               f"Let an admin create it (kafka-topics --create --topic {topic} --partitions 1 "
                               "--config cleanup.policy=compact) or grant this principal Create on it") from None
