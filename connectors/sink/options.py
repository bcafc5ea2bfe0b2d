"""Spark sink options -> ``SinkConfig`` (Spark's Kafka sink option names, plus ours).

Options (Spark passes them with lower-cased keys):
  kafka.bootstrap.servers (required), kafka.* (producer settings), topic,
  transactional.id.prefix (required), kafka.transaction.timeout.ms,
  trigger.interval.ms / batch.margin.ms (for the timeout rule), transactional.id.slots,
  sinkLogLocation (default: <checkpointLocation>/kafka-eos-sink), commit.timeout.ms (default 120000),
  guarantee (exactly_once | at_least_once; default exactly_once),
  batchLog (true | false; default true: one INFO line per committed batch on the driver's stderr),
  fixedPartitions (true | false; default false: an output topic that gained partitions is accepted
  with a warning, keys then hash to other partitions; true stops the query instead),
  prefixClaim (broker | off; default broker) / prefixClaimTopic (default _kafka_eos_prefix_claims):
  the prefix's owner on the cluster (connectors/sink/prefix_owner.py),
  faultInjection / faultInjectionDir (tests and chaos runs only).
"""
from __future__ import annotations

from typing import Mapping

from kafka_eos.kafka_clients import COMMIT_DEADLINE_MS
from kafka_eos.txn.errors import SinkConfigError
from kafka_eos.txn.faults import FaultPlan
from kafka_eos.txn.sink_config import ProducerViolation, SinkConfig, producer_violations
from kafka_eos.txn.sink_log import location_from_options
from kafka_eos.txn.timeouts import DEFAULT_BATCH_MARGIN_MS, DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_eos.txn.transactional_ids import DEFAULT_SLOTS

# the sink option that sets what a refused producer setting would (SinkConfig field -> option)
_OPTION_FOR = {"transactional_id_prefix": "transactional.id.prefix",
               "transaction_timeout_ms": "kafka.transaction.timeout.ms"}


def _int(options: Mapping[str, str], key: str, default: int) -> int:
    value = options.get(key.lower())
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise SinkConfigError(f"sink option {key}={value!r} is not a whole number of milliseconds") from None


def _refusal(v: ProducerViolation) -> str:
    fix = f"set the sink option '{_OPTION_FOR[v.replaced_by]}' instead" if v.replaced_by else v.fix
    return f"sink option {v.message('kafka.' + v.key)}; {fix}"


def producer_conf(options: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options without the prefix, less ``kafka.transaction.timeout.ms`` (the
    sink's timeout option); ``SinkConfigError`` when a producer setting is unsafe."""
    conf = {k[len("kafka."):]: str(v) for k, v in options.items() if k.startswith("kafka.")}
    if "bootstrap.servers" not in conf:
        raise SinkConfigError("sink option kafka.bootstrap.servers is required (e.g. 'broker1:9092')")
    conf.pop("transaction.timeout.ms", None)
    problems = producer_violations(conf)
    if problems:
        raise SinkConfigError("; ".join(_refusal(v) for v in problems))
    return conf


def sink_log_location(options: Mapping[str, str]) -> str:
    """``txn.sink_log.location_from_options``; refused when the options name no place for it."""
    location = location_from_options(options)
    if location is None:
        raise SinkConfigError("the kafka-eos sink keeps its commit log beside the query checkpoint: set "
                              ".option('checkpointLocation', ...) on writeStream (or option sinkLogLocation)")
    return location


def sink_config(options: Mapping[str, str]) -> SinkConfig:
    options = {k.lower(): v for k, v in options.items()}
    prefix = options.get("transactional.id.prefix")
    if not prefix:
        raise SinkConfigError("sink option transactional.id.prefix is required: a name unique to this "
                              "query, kept across restarts (e.g. .option('transactional.id.prefix', 'orders-eos'))")
    log_location = sink_log_location(options)
    guarantee = options.get("guarantee", "exactly_once").lower()
    if guarantee not in ("exactly_once", "at_least_once"):
        raise SinkConfigError(f"sink option guarantee={guarantee!r}: use exactly_once or at_least_once")
    return SinkConfig(
        exactly_once=guarantee == "exactly_once",
        producer_conf=producer_conf(options),
        transactional_id_prefix=prefix,
        log_location=log_location,
        topic=options.get("topic") or None,
        transaction_timeout_ms=_int(options, "kafka.transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS),
        trigger_interval_ms=_int(options, "trigger.interval.ms", 0),
        batch_margin_ms=_int(options, "batch.margin.ms", DEFAULT_BATCH_MARGIN_MS),
        slots=_int(options, "transactional.id.slots", DEFAULT_SLOTS),
        commit_timeout_s=_int(options, "commit.timeout.ms", COMMIT_DEADLINE_MS) / 1000,
        fixed_partitions=_bool(options, "fixedPartitions", False),
    )


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = str({k.lower(): v for k, v in options.items()}.get(key.lower(), default)).lower()
    if value not in ("true", "false"):
        raise SinkConfigError(f"sink option {key}={value!r}: use true or false")
    return value == "true"


def batch_log(options: Mapping[str, str]) -> bool:
    return _bool(options, "batchLog", True)


def fault_plan(options: Mapping[str, str]) -> FaultPlan:
    options = {k.lower(): v for k, v in options.items()}
    return FaultPlan.parse(options.get("faultinjection"), options.get("faultinjectiondir"))
