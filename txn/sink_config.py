"""SinkConfig: every setting of the transactional Kafka sink, as one frozen object.

Invariants:
- ``producer_conf`` are librdkafka settings; the sink forces ``enable.idempotence=true`` and
  ``acks=all`` (a conflicting user value is refused, never silently overridden).
- ``exactly_once=False`` (guarantee at_least_once) writes with the same idempotent producer but
  no transaction: records are visible at once and a replayed batch is written again.
- Secrets (passwords, keys, tokens) live in ``producer_conf`` but never in ``repr``/``str``.
- Timeouts obey ``kafka_eos.txn.timeouts.check_transaction_timeout``.
- Keys land where Java clients (and Spark's built-in ``kafka`` sink) put them: the producer's
  ``partitioner`` defaults to ``murmur2_random`` (librdkafka's own default, ``consistent_random``,
  hashes with CRC32); a user's ``kafka.partitioner`` wins.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from kafka_eos.txn.timeouts import DEFAULT_BATCH_MARGIN_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_eos.txn.transactional_ids import DEFAULT_SLOTS, TransactionalIdFactory

SECRET_MARKERS = ("password", "secret", "jaas", "token", "ssl.key.pem", "private")
FORCED = {"enable.idempotence": "true", "acks": "all"}
DEFAULTS = {"linger.ms": "5", "batch.num.messages": "10000", "queue.buffering.max.messages": "500000",
            "partitioner": "murmur2_random"}  # murmur2: the Java client's partitioner
ACKS_ALL = {"all", "-1"}


def is_secret(key: str) -> bool:
    return any(marker in key.lower() for marker in SECRET_MARKERS)


def redacted(conf: Mapping[str, str]) -> dict[str, str]:
    return {k: ("***" if is_secret(k) else v) for k, v in conf.items()}


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
    commit_timeout_s: float = 60.0
    exactly_once: bool = True
    ids: TransactionalIdFactory = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "producer_conf", MappingProxyType(dict(self.producer_conf)))
        object.__setattr__(self, "ids", TransactionalIdFactory(self.transactional_id_prefix, self.slots))

    @property
    def bootstrap(self) -> str:
        return self.producer_conf["bootstrap.servers"]

    def client_conf(self) -> dict[str, str]:
        """Connection and security settings shared by producers and the control-plane client."""
        return dict(self.producer_conf)

    def producer_settings(self, transactional_id: str) -> dict:
        """librdkafka settings of a task's producer; at-least-once producers get no transaction."""
        settings = {**DEFAULTS, **self.producer_conf, **FORCED}
        if self.exactly_once:
            settings.update({"transactional.id": transactional_id,
                             "transaction.timeout.ms": str(self.transaction_timeout_ms)})
        return settings

    def __repr__(self) -> str:
        return (f"SinkConfig(prefix={self.transactional_id_prefix!r}, topic={self.topic!r}, "
                f"transaction_timeout_ms={self.transaction_timeout_ms}, log={self.log_location!r}, "
                f"producer_conf={redacted(self.producer_conf)})")

    __str__ = __repr__
