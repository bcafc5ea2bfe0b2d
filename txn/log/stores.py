"""The one place that turns a location into a store of kafka-eos's own records.

Invariants this module enforces:
- A location ``kafka:<store topic>/<folder...>`` is kept in Kafka (``kafka_store``); any other
  location is a file store (``log_store``: a path or a pyarrow URI). Every reader and writer of
  kafka-eos's records opens its store through ``open_reader`` / ``open_store``.
- A Kafka location carries no cluster settings (nothing secret can reach a location string, a
  log line, an error or a checkpoint file): the settings are registered in this process by the
  code that has them (``register``: the sink's producer settings, the cluster of its output),
  keyed by the store topic. Opening a Kafka location whose topic was not registered raises
  ``SinkLogError`` naming the topic, never guessing a cluster. Only the connection and security
  settings are kept (``kafka_index.connection_settings``).
- One ``KafkaWriter`` per store topic and role per process (a second one of a role would fence
  the first): writers are opened at the first write-capable store of a (topic, role) and kept.
  The role of a store opened without one is the process's (``use_role``; default ``OPERATOR``):
  the sink's start sets it for pyspark's planner and commit workers, the follower for itself.
- Readers of a topic in a process share one view (``TopicTail``), refreshed at every read; a
  lock per topic keeps threads (progress lines, metrics, the commit) from interleaving on it.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Mapping

from kafka_eos.client_factory import QuietClients
from kafka_eos.txn.log.kafka_index import TopicTail, connection_settings, open_tail, record_key
from kafka_eos.txn.log.kafka_store import KafkaReader, KafkaStore, KafkaWriter, StoreRole, store_topic
from kafka_eos.txn.log.log_store import LogReader, LogStore
from kafka_eos.txn.protocol.errors import SinkLogError

KAFKA = "kafka:"


@dataclass(frozen=True)
class KafkaLocation:
    topic: str
    folder: str

    def __str__(self) -> str:
        return f"{KAFKA}{self.topic}/{self.folder}" if self.folder else f"{KAFKA}{self.topic}"


@dataclass(frozen=True)
class _Cluster:
    settings: Mapping[str, str]
    prefix: str  # the transactional-id prefix of the store's writers


def parse_kafka(location: str) -> KafkaLocation | None:
    """The topic and folder of a ``kafka:<topic>/<folder>`` location; None for any other."""
    if not location.startswith(KAFKA):
        return None
    topic, _, folder = location[len(KAFKA):].strip("/").partition("/")
    if not topic:
        raise SinkLogError(f"{location!r}: a Kafka record location is kafka:<store topic>/<folder>")
    return KafkaLocation(topic, folder.strip("/"))


def is_kafka(location: str | None) -> bool:
    return bool(location) and str(location).startswith(KAFKA)


def checkpoint_folder(checkpoint: str) -> str:
    """The folder of one checkpoint's records in its store topic: ``ck-<16 hex of the location>``
    (a new checkpoint of the same prefix gets records of its own)."""
    return "ck-" + hashlib.sha256(checkpoint.rstrip("/").encode("utf-8")).hexdigest()[:16]


def kafka_records_root(prefix: str, checkpoint: str) -> str:
    """Where a pipeline of transactional-id prefix ``prefix`` checkpointed at ``checkpoint`` keeps
    its records in Kafka: ``kafka:_kafka_eos_store-<prefix>/ck-<hex>``."""
    return str(KafkaLocation(store_topic(prefix), checkpoint_folder(checkpoint)))


class _Registry:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.clusters: dict[str, _Cluster] = {}
        self.writers: dict[tuple[str, StoreRole], KafkaWriter] = {}
        self.tails: dict[str, TopicTail] = {}
        self.topic_locks: dict[str, threading.RLock] = {}
        self.role = StoreRole.OPERATOR
        self.clients = QuietClients()


_REGISTRY = _Registry()


def register(location: str | None, conf: Mapping[str, str], prefix: str) -> None:
    """Keep the cluster settings of the store a Kafka ``location`` names (nothing for another
    location). ``conf``: librdkafka settings of that cluster (the sink's producer settings)."""
    found = parse_kafka(location) if location else None
    if found is None:
        return
    with _REGISTRY.lock:
        _REGISTRY.clusters[found.topic] = _Cluster(connection_settings(conf), prefix)


def use_role(role: StoreRole) -> None:
    """The role of the stores this process opens without naming one."""
    _REGISTRY.role = role


def process_role() -> StoreRole:
    return _REGISTRY.role


def _cluster(found: KafkaLocation) -> _Cluster:
    cluster = _REGISTRY.clusters.get(found.topic)
    if cluster is None:
        raise SinkLogError(f"{found}: no Kafka cluster is known in this process for the record store topic "
                           f"{found.topic!r}; the sink registers its output cluster's settings (the sink's kafka.* "
                           "options) before its records are read. Open this location through the pipeline "
                           "(kafka-eos commands given the pipeline file), not by itself")
    return cluster


def acl_advice(location: str) -> str | None:
    """The ACLs the principal needs on the Kafka store ``location`` names (None: not a Kafka location)."""
    found = parse_kafka(location)
    if found is None:
        return None
    cluster = _REGISTRY.clusters.get(found.topic)
    ids = f"{cluster.prefix}-store-" if cluster else "<transactional-id prefix>-store-"
    return (f"grant this principal Create, Describe, Read and Write on topic {found.topic} (Create only while it "
            f"does not exist; or let an admin create it: compacted, 1 partition) and Write on TransactionalId "
            f"{ids}* (prefixed; the prefixed Write on the sink's transactional-id prefix covers it)")


def _topic_lock(topic: str) -> threading.RLock:
    with _REGISTRY.lock:
        return _REGISTRY.topic_locks.setdefault(topic, threading.RLock())


def open_reader(location: str) -> LogReader:
    """A reader of ``location`` (creates nothing)."""
    found = parse_kafka(location)
    if found is None:
        return LogReader(location)
    cluster = _cluster(found)
    with _topic_lock(found.topic):
        tail = _REGISTRY.tails.get(found.topic)
        if tail is None:
            tail = _REGISTRY.tails[found.topic] = open_tail(cluster.settings, found.topic, _REGISTRY.clients)
    return SharedReader(tail, found.folder, _topic_lock(found.topic))


def open_store(location: str, role: StoreRole | None = None) -> LogStore:
    """A create-only store of ``location``; a Kafka one writes as ``role`` (default: the process's)."""
    found = parse_kafka(location)
    if found is None:
        return LogStore(location)
    cluster = _cluster(found)
    key = (found.topic, role or _REGISTRY.role)
    with _topic_lock(found.topic):
        writer = _REGISTRY.writers.get(key)
        if writer is None:
            writer = _REGISTRY.writers[key] = KafkaWriter.open(cluster.settings, cluster.prefix, key[1],
                                                               found.topic, _REGISTRY.clients)
    return SharedStore(writer, found.folder, _topic_lock(found.topic))


def close_all() -> None:
    """Close every writer and view this process opened (tests; a process's end closes them too)."""
    with _REGISTRY.lock:
        for writer in _REGISTRY.writers.values():
            writer.close()
        for tail in _REGISTRY.tails.values():
            tail.close()
        _REGISTRY.writers.clear()
        _REGISTRY.tails.clear()


def forget_clusters() -> None:
    """Forget the registered clusters (tests)."""
    close_all()
    with _REGISTRY.lock:
        _REGISTRY.clusters.clear()


class _LockedReads:
    """The reading methods of a shared reader or store, each holding the topic's lock (the view is
    the process's)."""
    _lock: threading.RLock

    def exists(self, name: str) -> bool:
        with self._lock:
            return super().exists(name)  # type: ignore[misc]

    def names(self) -> list[str]:
        with self._lock:
            return super().names()  # type: ignore[misc]

    def read_bytes(self, name: str) -> bytes | None:
        with self._lock:
            return super().read_bytes(name)  # type: ignore[misc]


class SharedReader(_LockedReads, KafkaReader):
    """A ``KafkaReader`` whose view other readers of the process share: reads hold the topic's lock."""

    def __init__(self, tail: TopicTail, folder: str, lock: threading.RLock) -> None:
        super().__init__(tail, folder)
        self._lock = lock

    def child(self, name: str) -> "SharedReader":
        return SharedReader(self.tail, record_key(self.folder, name), self._lock)

    def close(self) -> None:
        """The view is the process's: it stays open for the other readers."""


class SharedStore(_LockedReads, KafkaStore):
    """A ``KafkaStore`` on the process's writer of its role; every call holds the topic's lock."""

    def __init__(self, writer: KafkaWriter, folder: str, lock: threading.RLock) -> None:
        super().__init__(writer, folder)
        self._lock = lock

    def child(self, name: str) -> "SharedStore":
        return SharedStore(self.writer, record_key(self.folder, name), self._lock)

    def close(self) -> None:
        """The writer is the process's: it stays open."""

    def create_bytes(self, name: str, data: bytes) -> None:
        with self._lock:
            super().create_bytes(name, data)

    def delete(self, name: str) -> None:
        with self._lock:
            super().delete(name)
