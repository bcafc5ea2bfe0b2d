"""kafka-eos's own records kept in Kafka: the ``LogReader``/``LogStore`` methods on a topic.

Invariants this module enforces:
- One compacted topic of one partition per pipeline (``store_topic``) holds the records: key
  ``<folder>/<name>`` (``kafka_index.record_key``), value the record's bytes as given (callers
  version their JSON, ``log_store.versioned``); a tombstone deletes. A store or reader is opened
  on one folder of it, as a ``LogStore`` on a location.
- Writes go through one transactional producer per writer role (``StoreRole``; transactional.id
  ``<prefix>-store-<role>``): one role never fences another, and ``init_transactions`` at
  ``KafkaWriter.open`` fences an older writer of the same role (a second driver). A fenced
  writer raises ``StoreFencedError`` (topic, role, fix) and writes nothing more. A write that
  fails otherwise is aborted and the writer takes a new producer of its id (a refused record
  leaves a gap in the old one's sequence numbers); if another writer of the role opened
  meanwhile, that one is fenced instead: either way one writer of a role writes at a time.
- Create-only: the view is read to the last stable offset (``TopicTail``), a name present there
  raises ``FileExistsError``; otherwise one transaction writes the record, which is durable when
  ``create`` returns (the transaction committed) and, within ``VISIBLE_S``, readable by any
  reader opened or refreshed after. Within a role the fencing makes this exclusive; two roles
  racing on one name inside the check-then-write window are not (roles write different records).
- A reader (``KafkaReader``) has no producer and creates nothing: a missing topic reads as empty.
  Every read refreshes the view unless it was refreshed within ``max_age_s`` (0: every read).
- A writer creates its topic when absent (compact, 1 partition, replication min(3, brokers),
  min.insync.replicas one below it, at least 1; records up to ``RECORD_MAX_BYTES``); a larger
  record is refused before anything is written (``SinkLogError`` naming it and the limit).
- Clients come from ``kafka_eos.client_factory`` (``client_factory.QuietClients``); only connection and security
  settings are used, and no setting's value appears in an error.
"""
from __future__ import annotations

import logging
import time
from enum import Enum
from typing import Callable, Mapping, cast

from confluent_kafka import KafkaError, KafkaException, Producer
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kafka_eos.client_factory import QuietClients
from kafka_eos.kafka_clients import COMMIT_DEADLINE_MS, REQUEST_S, data_settings, kafka_error
from kafka_eos.txn.log.kafka_index import (BATCH_BYTES, OPEN_S, RECORD_MAX_BYTES, TopicTail, connection_settings,
                                           ensure_topic, folder_of, open_tail, record_key)
from kafka_eos.txn.log.log_store import LogReader, LogStore
from kafka_eos.txn.protocol.errors import SinkLogError, StoreFencedError

log = logging.getLogger(__name__)
MODE = "kafka (transactional, fenced per writer role)"
COMMIT_S = COMMIT_DEADLINE_MS / 1000
VISIBLE_S = 10.0  # create waits this long at most for its committed record to be readable
_FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


class StoreRole(Enum):
    """Who writes: each role has its own transactional id, so it fences only its own kind."""
    DRIVER = "driver"      # the sink's commit (pyspark's commit worker): decisions, segments
    PLANNER = "planner"    # the sink's start (pyspark's write planner worker): markers, recovery, sweeps
    RUNNER = "runner"      # the run's own process (kafka-eos run, spark-submit's driver): shape records
    OPERATOR = "operator"  # kafka-eos commands (verify runs, accept-loss, retire, stop)
    FOLLOWER = "follower"  # verify --follow
    PROBE = "probe"        # validate's and the start's store probe


def store_topic(prefix: str) -> str:
    """The record store topic of the pipeline with transactional-id prefix ``prefix``."""
    return f"_kafka_eos_store-{prefix}"


def transactional_id(prefix: str, role: StoreRole) -> str:
    """Not of the sink's id scheme (``<prefix>-<owner>-<n>-<n>``): its aborter never matches it."""
    return f"{prefix}-store-{role.value}"


def is_fenced(exc: BaseException) -> bool:
    error = kafka_error(exc)
    return error is not None and error.code() in _FENCED


def too_large(where: str, size: int, limit: str = f"{RECORD_MAX_BYTES} bytes") -> SinkLogError:
    return SinkLogError(f"{where}: a record of {size} bytes is larger than kafka-eos's record store takes "
                        f"({limit}); nothing was written. Keep such records out of the store (write evidence, "
                        "segments), or raise the store topic's max.message.bytes if an admin created it smaller")


def _retriable(exc: BaseException) -> bool:
    error = kafka_error(exc)
    return error is not None and error.retriable()


class KafkaWriter:
    """The one transactional producer of a role on a store topic, and its view of the topic.
    Every ``KafkaStore`` of the role in this process shares it (a second one would fence the first)."""

    def __init__(self, topic: str, role: StoreRole, txn_id: str, new_producer: Callable[[], Producer],
                 open_view: Callable[[], TopicTail]) -> None:
        """Fenced in first (an older writer of the role is fenced, its open transaction aborted),
        then the view is read: nothing of an older writer can follow what this one read."""
        self.topic, self.role, self.transactional_id = topic, role, txn_id
        self._new_producer = new_producer
        self._producer = self._fenced_in()
        self._fenced = False
        self.tail = open_view()

    def _fenced_in(self) -> Producer:
        """A new producer of this role's id: ``init_transactions`` fences every older one."""
        producer = self._new_producer()
        producer.init_transactions(COMMIT_S)
        return producer

    @classmethod
    def open(cls, conf: Mapping[str, str], prefix: str, role: StoreRole, topic: str | None = None,
             clients: QuietClients = QuietClients()) -> "KafkaWriter":
        """Create the topic if absent, fence an older writer of ``role``, read the topic."""
        topic = topic or store_topic(prefix)
        ensure_topic(conf, topic, clients)
        txn_id = transactional_id(prefix, role)
        settings = {**data_settings(connection_settings(conf)), "transactional.id": txn_id,
                    "enable.idempotence": "true", "acks": "all", "linger.ms": "0", "message.max.bytes": str(BATCH_BYTES)}
        return cls(topic, role, txn_id, lambda: clients.producer(settings),
                   lambda: open_tail(conf, topic, clients, OPEN_S))

    def close(self) -> None:
        self.tail.close()
        if not self._fenced:
            self._producer.flush(REQUEST_S)

    def write(self, key: str, value: bytes | None) -> None:
        """``value`` (None: a tombstone) under ``key`` in one committed transaction, then applied
        to the view; waits up to ``VISIBLE_S`` until the topic shows it to readers."""
        if self._fenced:
            raise StoreFencedError.of_writer(self.topic, self.role.value, self.transactional_id, key)
        offsets: list[int] = []
        producer = self._producer
        try:
            producer.begin_transaction()
            producer.produce(self.topic, key=key.encode("utf-8"), value=value, partition=0,
                             on_delivery=lambda err, msg: offsets.append(-1 if err else cast(int, msg.offset())))
            self._commit()
        except KafkaException as exc:
            self._failed(exc, key, value)
        if not offsets or offsets[0] < 0:
            raise AssertionError(f"{self.topic}: committed without a delivered record of {key!r}")
        self.tail.index.apply(key, value, offsets[0])
        if not self.tail.read_own(offsets[0], VISIBLE_S):
            log.warning("kafka-eos store %s: record %s committed, not yet readable after %.0f s (a transaction "
                        "of another writer is open before it)", self.topic, key, VISIBLE_S)

    def _commit(self) -> None:
        for attempt in Retrying(retry=retry_if_exception(_retriable), stop=stop_after_delay(COMMIT_S),
                                wait=wait_exponential(multiplier=0.1, max=2.0), reraise=True):
            with attempt:
                self._producer.commit_transaction(COMMIT_S)

    def _failed(self, exc: KafkaException, key: str, value: bytes | None) -> None:
        if is_fenced(exc):
            self._fenced = True
            raise StoreFencedError.of_writer(self.topic, self.role.value, self.transactional_id, key) from None
        try:
            self._producer.abort_transaction(REQUEST_S)
        except KafkaException:
            pass  # the new producer's init_transactions aborts it
        try:  # a record the broker refused leaves a gap in the old producer's sequence numbers
            self._producer = self._fenced_in()
        except KafkaException as again:
            if is_fenced(again):
                self._fenced = True
                raise StoreFencedError.of_writer(self.topic, self.role.value, self.transactional_id, key) from None
            raise
        error = kafka_error(exc)
        if error is not None and error.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
            raise too_large(f"kafka:{self.topic}/{key}", len(value or b""), "the topic's max.message.bytes") from None
        raise exc


class KafkaReader(LogReader):
    """``LogReader``'s methods on folder ``folder`` of a store topic; creates nothing. (A
    subclass so that it types as one; it has no file-system state: ``LogReader.__init__`` is not
    called and every method but ``read`` is its own.)"""

    def __init__(self, tail: TopicTail, folder: str, max_age_s: float = 0.0) -> None:
        self.tail, self.folder, self.max_age_s = tail, folder_of(folder), max_age_s
        self.location = f"kafka:{tail.topic}/{self.folder}"

    @classmethod
    def open(cls, conf: Mapping[str, str], topic: str, folder: str, max_age_s: float = 0.0,
             clients: QuietClients = QuietClients()) -> "KafkaReader":
        return cls(open_tail(conf, topic, clients), folder, max_age_s)

    def child(self, name: str) -> "KafkaReader":
        """The sub-folder ``name``, sharing this reader's view."""
        return KafkaReader(self.tail, record_key(self.folder, name), self.max_age_s)

    def close(self) -> None:
        """Close the view (shared with this reader's children)."""
        self.tail.close()

    def _fresh(self) -> None:
        if time.monotonic() - self.tail.refreshed_at > self.max_age_s:
            self.tail.refresh()

    def exists(self, name: str) -> bool:
        self._fresh()
        return self.tail.index.exists(record_key(self.folder, name))

    def names(self) -> list[str]:
        self._fresh()
        return self.tail.index.names(self.folder)

    def read_bytes(self, name: str) -> bytes | None:
        self._fresh()
        return self.tail.index.get(record_key(self.folder, name))


class KafkaStore(KafkaReader, LogStore):
    """``LogStore``'s methods on folder ``folder`` of the store topic ``writer`` writes."""

    def __init__(self, writer: KafkaWriter, folder: str) -> None:
        super().__init__(writer.tail, folder)
        self.writer = writer

    def child(self, name: str) -> "KafkaStore":
        return KafkaStore(self.writer, record_key(self.folder, name))

    @property
    def create_mode(self) -> str:
        return MODE

    @property
    def exclusive(self) -> bool:
        """Kafka fences a second writer of the role: no other create of it races this one's."""
        return True

    def create_bytes(self, name: str, data: bytes) -> None:
        """Create ``name`` with ``data``; ``FileExistsError`` if it exists (never overwrite)."""
        key = record_key(self.folder, name)
        if len(data) > RECORD_MAX_BYTES:
            raise too_large(f"{self.location}/{name}", len(data))
        self.tail.refresh()
        if self.tail.index.get(key) is not None:
            raise FileExistsError(f"{self.location}/{name}")
        self.writer.write(key, data)

    def delete(self, name: str) -> None:
        key = record_key(self.folder, name)
        self.tail.refresh()
        if self.tail.index.get(key) is not None:
            self.writer.write(key, None)
