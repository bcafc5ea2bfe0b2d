"""SinkConfig: every setting of the transactional Kafka sink, as one frozen object, and the one
check of the user's producer settings.

Invariants:
- ``producer_violations`` is the one owner of producer safety: ``enable.idempotence`` must be
  true and ``acks`` all; ``transactional.id`` and ``transaction.timeout.ms`` are the sink's own
  (from ``transactional_id_prefix`` and ``transaction_timeout_ms``); ``isolation.level`` is a
  consumer setting. It returns structured ``ProducerViolation``s that callers phrase in their
  own option names.
- ``SinkConfig`` refuses ``producer_conf`` with any violation (``SinkConfigError``), so the forced
  ``enable.idempotence=true`` / ``acks=all`` only fill in what the user left unset: a conflicting
  user value is refused, never silently overridden.
- ``exactly_once=False`` (guarantee at_least_once) writes with the same idempotent producer but
  no transaction: records are visible at once and a replayed batch is written again.
- Secrets (``kafka_eos.secrets.is_secret_key``) live in ``producer_conf`` but never in ``repr``/``str``.
- Timeouts obey ``kafka_eos.txn.protocol.timeouts.check_transaction_timeout``.
- Keys land where Java clients (and Spark's built-in ``kafka`` sink) put them: the producer's
  ``partitioner`` defaults to ``murmur2_random`` (librdkafka's own default, ``consistent_random``,
  hashes with CRC32); a user's ``kafka.partitioner`` wins.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from kafka_eos.kafka_clients import COMMIT_DEADLINE_MS, DATA_SOCKET_TIMEOUT_MS
from kafka_eos.secrets import redacted
from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.log.sink_log_segments import DEFAULT_EVIDENCE_RETENTION_MS
from kafka_eos.txn.protocol.timeouts import DEFAULT_BATCH_MARGIN_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_eos.txn.protocol.transactional_ids import DEFAULT_SLOTS, TransactionalIdFactory

FORCED = {"enable.idempotence": "true", "acks": "all"}
DEFAULTS = {"linger.ms": "5", "batch.num.messages": "10000", "queue.buffering.max.messages": "500000",
            "partitioner": "murmur2_random",  # murmur2: the Java client's partitioner
            # Connect to every broker at once: with sparse connections librdkafka drops the bootstrap
            # connection after the first metadata and, about half the time, waits for its 500 ms
            # coordinator timer before init_transactions can find the coordinator (bench/README.md).
            "enable.sparse.connections": "false",
            # a hung broker keeps its connection up: 30 s per request (librdkafka: 60 s), TCP keepalive
            # (kafka_eos.kafka_clients.TIMEOUTS["sink.producer_requests"])
            "socket.timeout.ms": str(DATA_SOCKET_TIMEOUT_MS), "socket.keepalive.enable": "true"}
ACKS_ALL = {"all", "-1"}
UNSET = "unset"
# producer settings the sink sets itself -> (the SinkConfig field it derives them from, why)
OWNED = {"transactional.id": ("transactional_id_prefix", "kafka-eos derives the transactional ids from its prefix"),
         "transaction.timeout.ms": ("transaction_timeout_ms", "the sink sets it from its transaction timeout")}
NOT_PRODUCER = {"isolation.level": "a producer does not take isolation.level; set it on the source"}


@dataclass(frozen=True)
class ProducerViolation:
    """One unsafe producer setting: ``key`` holds ``found``; the sink requires ``required``
    (a value, or ``UNSET``). ``replaced_by`` names the ``SinkConfig`` field that sets it instead."""
    key: str
    found: str
    required: str
    problem: str
    fix: str
    replaced_by: str | None = None

    def message(self, name: str | None = None) -> str:
        """What is wrong, naming the setting ``name`` (default: the producer key)."""
        name = name or self.key
        if self.required == UNSET:
            return f"{name} must not be set: {self.problem}"
        return f"{name}={self.found} {self.problem}"


def _value(conf: Mapping[str, object], key: str) -> str | None:
    value = conf.get(key)
    return None if value is None else str(value)


def producer_violations(conf: Mapping[str, object]) -> list[ProducerViolation]:
    """Every producer setting in ``conf`` that would break the sink's guarantee."""
    found = []
    for key, (replaced_by, problem) in OWNED.items():
        if (value := _value(conf, key)) is not None:
            found.append(ProducerViolation(key, value, UNSET, problem,
                                           f"remove it and set the sink's {replaced_by} instead", replaced_by))
    for key, problem in NOT_PRODUCER.items():
        if (value := _value(conf, key)) is not None:
            found.append(ProducerViolation(key, value, UNSET, problem, "remove it"))
    idempotence = _value(conf, "enable.idempotence")
    if idempotence is not None and idempotence.strip().lower() != "true":
        found.append(ProducerViolation("enable.idempotence", idempotence, "true", "turns idempotence off: "
                                       "a non-idempotent producer can write duplicates",
                                       "remove it or set enable.idempotence to true"))
    for key in ("acks", "request.required.acks"):
        acks = _value(conf, key)
        if acks is not None and acks.strip().lower() not in ACKS_ALL:
            found.append(ProducerViolation(key, acks, "all", "can lose acknowledged records",
                                           f"remove it or set {key} to all"))
    return found


@dataclass(frozen=True)
class SinkConfig:
    producer_conf: Mapping[str, str]
    transactional_id_prefix: str
    log_location: str
    topic: str | None = None
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    trigger_interval_ms: int = 0
    batch_margin_ms: int = DEFAULT_BATCH_MARGIN_MS
    slots: int = DEFAULT_SLOTS
    commit_timeout_s: float = COMMIT_DEADLINE_MS / 1000
    exactly_once: bool = True
    fixed_partitions: bool = False  # an output topic that grew stops the query (kafka_eos.txn.topics.output_topics)
    copy_timestamps: bool = True  # offset-range input: each record keeps its source record's timestamp
    write_evidence: bool = True  # exactly-once tasks record counts and digests for verify (kafka_eos.txn.writer.write_evidence)
    id_owner: str | None = None  # owner part of the ids (None: the legacy scheme); see transactional_ids
    # how long the sink log keeps a committed batch's record (beyond the newest 100); see sink_log
    evidence_retention_ms: int = DEFAULT_EVIDENCE_RETENTION_MS
    checkpoint_location: str | None = None  # the engine's checkpoint (Spark's offset log: a batch's inputs)
    ids: TransactionalIdFactory = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        problems = producer_violations(self.producer_conf)
        if problems:
            raise SinkConfigError("; ".join(f"producer setting {p.message()}: {p.fix}" for p in problems))
        object.__setattr__(self, "producer_conf", MappingProxyType(dict(self.producer_conf)))
        object.__setattr__(self, "ids", TransactionalIdFactory(self.transactional_id_prefix, self.slots,
                                                                 self.id_owner))

    @property
    def bootstrap(self) -> str:
        return self.producer_conf["bootstrap.servers"]

    def client_conf(self) -> dict[str, str]:
        """Connection and security settings shared by producers and the control-plane client."""
        return dict(self.producer_conf)

    def producer_settings(self, transactional_id: str) -> dict:
        """librdkafka settings of a task's producer (``FORCED`` fills what ``producer_conf`` leaves
        unset; a conflict was refused at construction); at-least-once producers get no transaction.
        An unset ``socket.timeout.ms`` is capped at ``transaction.timeout.ms`` (librdkafka refuses a
        transactional producer whose socket timeout exceeds it by more than 100 ms)."""
        settings = {**DEFAULTS, **self.producer_conf, **FORCED}
        if self.exactly_once:
            settings.update({"transactional.id": transactional_id,
                             "transaction.timeout.ms": str(self.transaction_timeout_ms)})
            if "socket.timeout.ms" not in self.producer_conf:  # librdkafka: <= transaction.timeout.ms + 100
                settings["socket.timeout.ms"] = str(min(DATA_SOCKET_TIMEOUT_MS, self.transaction_timeout_ms))
        return settings

    def __repr__(self) -> str:
        return (f"SinkConfig(prefix={self.transactional_id_prefix!r}, topic={self.topic!r}, "
                f"transaction_timeout_ms={self.transaction_timeout_ms}, log={self.log_location!r}, "
                f"producer_conf={redacted(self.producer_conf)})")

    __str__ = __repr__
