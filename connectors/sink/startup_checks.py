"""The checks of the sink's query start (``query_start``): schema, timeouts against the broker,
ACLs; and the check of every write task: no speculative execution.

``spark.speculation=true`` is refused: a speculative copy of a write task would open a second
transaction for the same rows; the driver commits the first finisher's, and the loser's stays
open (holding back read_committed readers) until the lingering cleanup. The query start runs in
a planner process that does not see the Spark configuration, so the check runs in every write
task, before it opens a producer (Spark copies the session's settings into the tasks' local
properties): the first batch fails with the message and nothing is written.

The principal's ACLs (Write on the sink topic, Write on the transactional-id prefix and
IdempotentWrite if the broker asks for it: ``kafka_eos.txn.cluster.acl_checks``) are asked once per
process and connection settings, at the query start's step 2, before recovery opens any
transaction: a missing one fails the start with ``AclMissingError`` naming the ``kafka-acls``
command to add it.

Every live broker must be Kafka 3.7+ and offer the requests the driver sends
(``kafka_eos.txn.cluster.broker_support``, ApiVersions; asked once per process and connection settings;
a broker that does not answer, hung or cut off, does not stop the start: it is named in a warning
and asked again at a later batch's start, no sooner than ``RECHECK_S``).

The broker's ``transaction.max.timeout.ms`` is read once per process and connection settings
(``kafka_eos.txn.cluster.broker_configs``, DescribeConfigs); a broker that cannot be asked fails the start.
"""
from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Callable

from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType

from kafka_eos.connectors.sink.record_timestamp import TIMESTAMP, column_problem
from kafka_eos.txn.cluster import acl_checks, broker_configs, broker_support
from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.protocol.timeouts import check_transaction_timeout

log = logging.getLogger(__name__)

BROKER_TIMEOUT_S = 30.0  # as long as a control-plane request may take
RECHECK_S = 300.0        # a broker that did not answer the check is asked again no sooner than this
_ALLOWED = {"key": (StringType, BinaryType), "value": (StringType, BinaryType), "topic": (StringType,),
            "partition": (IntegerType,)}


def check_schema(schema: StructType, config: SinkConfig) -> None:
    names = {f.name: f for f in schema.fields}
    if "value" not in names:
        raise SinkConfigError(f"the kafka-eos sink needs a 'value' column; the query gives {sorted(names)}: "
                              "select an expression AS value (string or binary)")
    if "topic" not in names and not config.topic:
        raise SinkConfigError("no topic: set .option('topic', ...) or give the query a 'topic' column")
    for name, types in _ALLOWED.items():
        if name in names and not isinstance(names[name].dataType, types):
            raise SinkConfigError(f"sink column '{name}' is {names[name].dataType.simpleString()}; "
                                  f"cast it to {' or '.join(t().simpleString() for t in types)}")
    problem = column_problem(TIMESTAMP, names[TIMESTAMP].dataType) if TIMESTAMP in names else None
    if problem:
        raise SinkConfigError(f"sink {problem}, or drop the column (the producer's clock)")


@functools.lru_cache(maxsize=16)
def broker_max_timeout_ms(conf_key: tuple) -> int | None:
    """The broker's transaction.max.timeout.ms, or None if it does not say."""
    return broker_configs.transaction_max_timeout_ms(dict(conf_key), BROKER_TIMEOUT_S)


@dataclass
class _Brokers:
    """One connection settings' broker check in this process: who answered, when to ask the others."""
    supported: set[int] = field(default_factory=set)
    ask_again_at: float = 0.0
    complete: bool = False


_BROKERS: dict[tuple, _Brokers] = {}


def check_brokers(config: SinkConfig, now: Callable[[], float] = time.monotonic,
                  ask: Callable[..., broker_support.BrokerCheck] = broker_support.check_brokers) -> None:
    """Raise ``UnsupportedBrokerError`` for a broker the sink is not proven on (name, version, fix).
    A broker that does not answer is named in a warning and asked again at a later writer's start,
    no sooner than ``RECHECK_S`` after (so a hung broker costs a batch one connect timeout at most
    that often); the brokers that answered are not asked again."""
    state = _BROKERS.setdefault(tuple(sorted(config.client_conf().items())), _Brokers())
    if state.complete or now() < state.ask_again_at:
        return
    seen = ask(config.client_conf(), BROKER_TIMEOUT_S, skip=state.supported)
    state.supported |= seen.supported
    state.complete = not seen.silent
    if seen.silent:
        state.ask_again_at = now() + RECHECK_S
        log.warning("kafka-eos: broker(s) %s did not answer the start-up check (ApiVersions: Kafka 3.7+, the "
                    "requests the commit sends); the sink runs on the brokers that answered and asks again in "
                    "%.0f s", ", ".join(map(str, sorted(seen.silent))), RECHECK_S)


def check_timeouts(config: SinkConfig) -> None:
    conf_key = tuple(sorted(config.client_conf().items()))
    violations = check_transaction_timeout(config.transaction_timeout_ms, config.trigger_interval_ms,
                                           config.batch_margin_ms, broker_max_timeout_ms(conf_key))
    if violations:
        raise SinkConfigError("; ".join(str(v) for v in violations))


def check_speculation(speculation: str | None) -> None:
    """Refuse ``spark.speculation=true`` (the value as Spark passes it to a task, None if unset)."""
    if str(speculation).strip().lower() == "true":
        raise SinkConfigError(
            "spark.speculation=true is not supported by the kafka-eos sink: a speculative copy of a write "
            "task opens a second Kafka transaction for the same rows, left open until cleanup and holding "
            "back read_committed readers. Set spark.speculation=false for this application.")


@functools.lru_cache(maxsize=16)
def _acls_checked(conf_key: tuple, topic: str | None, prefix: str) -> bool:
    acl_checks.check_sink(dict(conf_key), [topic] if topic else [], prefix, BROKER_TIMEOUT_S)
    return True


def check_acls(config: SinkConfig) -> None:
    """Raise ``AclMissingError`` if the principal lacks an ACL the sink needs."""
    _acls_checked(tuple(sorted(config.client_conf().items())), config.topic, config.transactional_id_prefix)
