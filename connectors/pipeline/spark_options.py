"""``PipelineConfig`` -> the option maps the runner hands to Spark (pure functions).

Invariants:
- Source options use exactly Spark's Kafka source names (``kafka.bootstrap.servers``,
  ``subscribe``/``subscribePattern``/``assign``, ``startingOffsets``, ``maxOffsetsPerTrigger``,
  ``kafka.*`` passthrough), plus kafka-eos's ``alignMaxDriftMs``/``alignIdleTimeoutMs`` for
  ``source.align``; sink options the kafka-eos sink's (``kafka.*``, ``topic``,
  ``transactional.id.prefix``, ``kafka.transaction.timeout.ms``, ``trigger.interval.ms``,
  ``batch.margin.ms``, ``checkpointLocation``, ``fixedPartitions``). ``source.options``/``sink.options`` pass through.
- Secrets are revealed here (Spark needs them): never log these maps; use ``kafka_eos.config.redact``.
- With a DLQ the ``topic`` option is left out (it would override the rows' topic column): every
  row then carries its topic, as ``sink_select_exprs`` selects it.
"""
from __future__ import annotations

import json

from kafka_eos.config.model import KafkaCluster, OnDecodeError, PipelineConfig, Props, reveal


def _kafka(cluster: KafkaCluster) -> dict[str, str]:
    options = {f"kafka.{k}": reveal(v) or "" for k, v in cluster.properties}
    options["kafka.bootstrap.servers"] = cluster.bootstrap_servers or ""
    return options


def _passthrough(options: Props) -> dict[str, str]:
    return {k: reveal(v) or "" for k, v in options}


def source_options(cfg: PipelineConfig) -> dict[str, str]:
    s = cfg.source
    options = _kafka(s.kafka)
    if cfg.exactly_once:
        options.setdefault("kafka.isolation.level", "read_committed")
    if s.topics:
        options["subscribe"] = ",".join(s.topics)
    elif s.pattern:
        options["subscribePattern"] = s.pattern
    elif s.assign:
        options["assign"] = json.dumps({topic: list(parts) for topic, parts in s.assign})
    options["startingOffsets"] = s.starting_offsets
    if s.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(s.max_offsets_per_trigger)
    if s.include_headers:
        options["includeHeaders"] = "true"
    if s.align is not None:
        options["alignMaxDriftMs"] = str(s.align.max_drift_ms)
        options["alignIdleTimeoutMs"] = str(s.align.idle_timeout_ms)
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
    s, trigger = cfg.sink, cfg.checkpoint.trigger
    options = _kafka(s.kafka)
    if s.topic and not routes_by_topic(cfg):
        options["topic"] = s.topic
    options.update({
        "transactional.id.prefix": s.transactional_id_prefix or "",
        "kafka.transaction.timeout.ms": str(s.transaction_timeout_ms),
        "trigger.interval.ms": str(0 if trigger.available_now else trigger.interval_ms),
        "batch.margin.ms": str(s.batch_margin_ms),
        "checkpointLocation": cfg.checkpoint.location or "",
        "fixedPartitions": "true" if s.fixed_partitions else "false",
    })
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
    (key, value[, topic][, headers]); the value is still to be encoded to the sink format."""
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
    return exprs
