"""Spark sink options -> ``SinkConfig`` (Spark's Kafka sink option names, plus ours).

The options, their kinds and defaults are declared in ``kafka_eos.config.spark_option_table``
(``SINK_OPTIONS``, also the option table of config/README.md); this module reads them through
those declarations, case-insensitively (``kafka_eos.option_map``), and enforces: the required
``kafka.bootstrap.servers`` and ``transactional.id.prefix``, a place for the sink log, producer
settings safe for exactly-once (``txn.sink_config.producer_violations``), and the test hooks
``faultInjection`` / ``faultInjectionDir`` refused unless ``KAFKA_EOS_TEST_HOOKS=1``
(``config.spark_option.refuse_test_hooks``). Both ``sink_config`` and ``fault_plan`` run on the
driver only (the stream writer is built there; its tasks get the parsed ``FaultPlan`` pickled), so
the variable is needed in the driver's environment alone.
"""
from __future__ import annotations

from typing import Mapping

from kafka_eos.config.spark_option import refuse_test_hooks
from kafka_eos.config.spark_option_table import SINK_OPTIONS, sink_option
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.sink_config import ProducerViolation, SinkConfig, producer_violations
from kafka_eos.txn.log.sink_log import location_from_options
from kafka_eos.txn.log.stores import is_kafka, register


def _option_for(field: str) -> str:
    """The sink option that sets ``SinkConfig.<field>`` (the one whose YAML key is ``sink.<field>``)."""
    return next(o.name for o in SINK_OPTIONS if o.yaml == f"sink.{field}")


def _read(options: Mapping[str, str], name: str):
    return sink_option(name).read(options, SinkConfigError)


def _refusal(v: ProducerViolation) -> str:
    fix = f"set the sink option '{_option_for(v.replaced_by)}' instead" if v.replaced_by else v.fix
    return f"sink option {v.message('kafka.' + v.key)}; {fix}"


def producer_conf(options: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options without the prefix, less ``kafka.transaction.timeout.ms`` (the
    sink's timeout option); ``SinkConfigError`` when a producer setting is unsafe."""
    conf = OptionMap.of(options).with_prefix("kafka.")
    if "bootstrap.servers" not in conf:
        raise SinkConfigError("sink option kafka.bootstrap.servers is required (e.g. 'broker1:9092')")
    conf.pop("transaction.timeout.ms", None)
    problems = producer_violations(conf)
    if problems:
        raise SinkConfigError("; ".join(_refusal(v) for v in problems))
    return conf


def sink_log_location(options: Mapping[str, str]) -> str:
    """``txn.sink_log.location_from_options``; refused when the options name no place for it. A Kafka
    location's store gets the sink's cluster settings registered in this process (``txn.log.stores``):
    every reader of the sink log finds its location here, so it finds the cluster too."""
    options = OptionMap.of(options)
    location = location_from_options(options)
    if location is None:
        raise SinkConfigError("the kafka-eos sink keeps its commit log beside the query checkpoint: set "
                              ".option('checkpointLocation', ...) on writeStream (or option sinkLogLocation)")
    if is_kafka(location):
        register(location, options.with_prefix("kafka."), _read(options, "transactional.id.prefix") or "")
    return location


def sink_config(options: Mapping[str, str]) -> SinkConfig:
    options = OptionMap.of(options)
    refuse_test_hooks(SINK_OPTIONS, options, SinkConfigError)
    prefix = _read(options, "transactional.id.prefix")
    if not prefix:
        raise SinkConfigError("sink option transactional.id.prefix is required: a name unique to this "
                              "query, kept across restarts (e.g. .option('transactional.id.prefix', 'orders-eos'))")
    log_location = sink_log_location(options)
    return SinkConfig(
        exactly_once=_read(options, "guarantee") == "exactly_once",
        producer_conf=producer_conf(options),
        transactional_id_prefix=prefix,
        log_location=log_location,
        topic=_read(options, "topic") or None,
        transaction_timeout_ms=_read(options, "kafka.transaction.timeout.ms"),
        trigger_interval_ms=_read(options, "trigger.interval.ms"),
        batch_margin_ms=_read(options, "batch.margin.ms"),
        slots=_read(options, "transactional.id.slots"),
        commit_timeout_s=_read(options, "commit.timeout.ms") / 1000,
        fixed_partitions=_read(options, "fixedPartitions"),
        write_evidence=_read(options, "writeEvidence"),
        copy_timestamps=_read(options, "copyTimestamps"),
        evidence_retention_ms=_read(options, "evidenceRetentionMs"),
        checkpoint_location=_read(options, "checkpointLocation") or None,
    )


def batch_log(options: Mapping[str, str]) -> bool:
    return _read(options, "batchLog")


def fault_plan(options: Mapping[str, str]) -> FaultPlan:
    """The sink's test hooks as a ``FaultPlan`` (off when unset); refused unless ``KAFKA_EOS_TEST_HOOKS=1``."""
    options = OptionMap.of(options)
    refuse_test_hooks(SINK_OPTIONS, options, SinkConfigError)
    return FaultPlan.parse(options.get("faultInjection"), options.get("faultInjectionDir"))
