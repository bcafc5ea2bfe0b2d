"""``PipelineConfig`` -> the option maps the runner hands to Spark (pure functions).

Invariants:
- Source options use exactly Spark's Kafka source names (``kafka.bootstrap.servers``,
  ``subscribe``/``subscribePattern``/``assign``, ``startingOffsets``, ``maxOffsetsPerTrigger``,
  ``kafka.*`` passthrough), plus kafka-eos's ``alignMaxDriftMs``/``alignIdleTimeoutMs`` for
  ``source.align``; sink options the kafka-eos sink's (``kafka.*``, ``topic``,
  ``transactional.id.prefix``, ``kafka.transaction.timeout.ms``, ``trigger.interval.ms``,
  ``batch.margin.ms``, ``checkpointLocation``, ``fixedPartitions``). ``source.options``/``sink.options`` pass through.
- Every option name and the text of every typed value come from the option's declaration
  (``kafka_eos.config.spark_option_table``), which the source's and sink's parsers read back.
- Secrets are revealed here (Spark needs them): never log these maps; use ``kafka_eos.config.redact``.
- With a DLQ the ``topic`` option is left out (it would override the rows' topic column): every
  row then carries its topic, as ``sink_select_exprs`` selects it.
"""
from __future__ import annotations

import json

from kafka_eos.config.model import KafkaCluster, OnDecodeError, PipelineConfig, Props, reveal
from kafka_eos.config.records import kafka_sink_log
from kafka_eos.config.spark_option import SparkOption
from kafka_eos.config.spark_option_table import sink_option, source_option


def _kafka(cluster: KafkaCluster) -> dict[str, str]:
    options = {f"kafka.{k}": reveal(v) or "" for k, v in cluster.properties}
    options[source_option("kafka.bootstrap.servers").name] = cluster.bootstrap_servers or ""
    return options


def _passthrough(options: Props) -> dict[str, str]:
    return {k: reveal(v) or "" for k, v in options}


def _set(options: dict[str, str], option: SparkOption, value) -> None:
    options[option.name] = option.text(value)


def source_options(cfg: PipelineConfig) -> dict[str, str]:
    s, o = cfg.source, source_option
    options = _kafka(s.kafka)
    if cfg.exactly_once:
        options.setdefault("kafka.isolation.level", "read_committed")
    if s.topics:
        _set(options, o("subscribe"), ",".join(s.topics))
    elif s.pattern:
        _set(options, o("subscribePattern"), s.pattern)
    elif s.assign:
        _set(options, o("assign"), json.dumps({topic: list(parts) for topic, parts in s.assign}))
    _set(options, o("startingOffsets"), s.starting_offsets)
    if s.max_offsets_per_trigger:
        _set(options, o("maxOffsetsPerTrigger"), s.max_offsets_per_trigger)
    if s.include_headers:
        _set(options, o("includeHeaders"), True)
    if s.align is not None:
        _set(options, o("alignMaxDriftMs"), s.align.max_drift_ms)
        _set(options, o("alignIdleTimeoutMs"), s.align.idle_timeout_ms)
    return {**options, **_passthrough(s.options)}


def uses_dlq(cfg: PipelineConfig) -> bool:
    return cfg.errors.on_decode_error is OnDecodeError.DLQ


def late_topic(cfg: PipelineConfig) -> str | None:
    """The topic late records go to (``transform.watermark.late_topic``), if any."""
    watermark = cfg.transform.watermark
    return watermark.late_topic if watermark is not None and watermark.late_topic else None


def routes_by_topic(cfg: PipelineConfig) -> bool:
    """Rows of other topics (DLQ, late) share the sink, so every row names its topic."""
    return uses_dlq(cfg) or late_topic(cfg) is not None


def sink_options(cfg: PipelineConfig) -> dict[str, str]:
    s, trigger, o = cfg.sink, cfg.checkpoint.trigger, sink_option
    options = _kafka(s.kafka)
    if s.topic and not routes_by_topic(cfg):
        _set(options, o("topic"), s.topic)
    _set(options, o("transactional.id.prefix"), s.transactional_id_prefix or "")
    _set(options, o("kafka.transaction.timeout.ms"), s.transaction_timeout_ms)
    _set(options, o("trigger.interval.ms"), 0 if trigger.available_now else trigger.interval_ms)
    _set(options, o("batch.margin.ms"), s.batch_margin_ms)
    _set(options, o("evidenceRetentionMs"), s.evidence_retention_ms)
    _set(options, o("checkpointLocation"), cfg.checkpoint.location or "")
    _set(options, o("fixedPartitions"), s.fixed_partitions)
    kafka_log = kafka_sink_log(cfg)  # checkpoint.records: kafka
    if kafka_log:
        _set(options, o("sinkLogLocation"), kafka_log)
    return {**options, **_passthrough(s.options)}


def trigger_kwargs(cfg: PipelineConfig) -> dict:
    """Keyword arguments for ``DataStreamWriter.trigger``."""
    trigger = cfg.checkpoint.trigger
    if trigger.available_now:
        return {"availableNow": True}
    return {"processingTime": f"{trigger.interval_ms} milliseconds"}


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sink_select_exprs(cfg: PipelineConfig) -> list[str]:
    """``selectExpr`` arguments turning the transform's result into the sink's columns
    (key, value[, topic][, headers][, partition]); the value is still to be encoded to the sink format."""
    s = cfg.sink
    exprs = [f"{_ident(s.value_column)} AS value"]
    if s.key_column:
        exprs.insert(0, f"{_ident(s.key_column)} AS key")
    if s.topic_column:
        exprs.append(f"{_ident(s.topic_column)} AS topic")
    elif routes_by_topic(cfg) and s.topic:
        exprs.append(f"{_literal(s.topic)} AS topic")
    if s.headers_column:
        exprs.append(f"{_ident(s.headers_column)} AS headers")
    if s.partition_column:
        exprs.append(f"CAST({_ident(s.partition_column)} AS INT) AS partition")
    return exprs
