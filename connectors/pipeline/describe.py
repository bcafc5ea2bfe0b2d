"""``kafka-eos describe``: the resolved plan of a pipeline, as YAML (or JSON) with secrets redacted.

The plan shows what a run would do: topics, where reading starts (from the checkpoint when one
exists, else ``starting_offsets`` resolved against the live broker), the transactional ids, the
SQL and steps, the Spark options. Invariant: describing reads only; it never writes a
checkpoint or touches a topic (the checkpoint is read through ``checkpoint_log``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Union, cast

import yaml

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.redact import Redactor
from kafka_eos.config.state_backend import PROVIDER_CONF
from kafka_eos.config.state_backend import describe as describe_provider
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, source_offsets
from kafka_eos.connectors.pipeline.spark_options import sink_options, sink_select_exprs, source_options, trigger_kwargs
from kafka_eos.txn.log.log_store import local_path
from kafka_eos.txn.protocol.transactional_ids import DEFAULT_SLOTS, TransactionalIdFactory


def _schema(schema) -> str | None:
    if schema is None:
        return None
    parts = [schema.file or ("inline" if schema.inline else None),
             f"registry {schema.registry.url}{schema.registry.settings_text()}" if schema.registry else None]
    return ", ".join(p for p in parts if p)


def _topics(cfg: PipelineConfig) -> dict[str, Any]:
    s = cfg.source
    if s.topics:
        return {"topics": list(s.topics)}
    if s.pattern:
        return {"pattern": s.pattern}
    return {"assign": {t: list(p) for t, p in s.assign}}


def plan(cfg: PipelineConfig) -> dict[str, Any]:
    """The plan of ``cfg`` from the file alone (no broker, no checkpoint)."""
    s, k, t = cfg.source, cfg.sink, cfg.transform
    # cast: an option value is a Secret only under a secret-named key, and this key is not one
    slots = int(cast(Union[str, int], dict(k.options).get("transactional.id.slots", DEFAULT_SLOTS)))
    trigger = cfg.checkpoint.trigger
    return {
        "pipeline": cfg.name or Path(cfg.origin).stem,
        "file": cfg.origin,
        "guarantee": cfg.guarantee.value,
        "source": {"cluster": s.kafka.redacted(), **_topics(cfg), "starting_offsets": s.starting_offsets,
                   "max_offsets_per_trigger": s.max_offsets_per_trigger, "format": s.format.value,
                   "key_format": s.key_format.value, "schema": _schema(s.schema), "key_schema": _schema(s.key_schema),
                   "align": None if s.align is None else {"max_drift_ms": s.align.max_drift_ms,
                                                          "idle_timeout_ms": s.align.idle_timeout_ms}},
        "transform": {"watermark": None if t.watermark is None else
                      {"column": t.watermark.column, "expression": t.watermark.expression, "delay": t.watermark.delay,
                       "late_topic": t.watermark.late_topic},
                      "sql": t.sql, "steps": [{st.kind: list(st.exprs)} for st in t.steps]},
        "sink": {"cluster": k.kafka.redacted(), "topic": k.topic, "topic_column": k.topic_column,
                 "columns": sink_select_exprs(cfg), "format": k.format.value, "schema": _schema(k.schema),
                 "key_format": k.key_format.value, "key_schema": _schema(k.key_schema),
                 # cast: the factory itself refuses a missing prefix (SinkConfigError)
                 "transactional_ids": TransactionalIdFactory(cast(str, k.transactional_id_prefix), slots).describe()
                 if cfg.exactly_once else None,
                 "transaction_timeout_ms": k.transaction_timeout_ms},
        "checkpoint": {"location": cfg.checkpoint.location, "trigger": str(trigger)},
        "errors": {"on_decode_error": cfg.errors.on_decode_error.value, "dlq_topic": cfg.errors.dlq_topic},
        "metrics": None if cfg.metrics is None else cfg.metrics.url,
        "state": {"backend": cfg.state.backend.value if cfg.state.backend else None,
                  "max_memory_mb": cfg.state.max_memory_mb},
        "spark": {"source_options": source_options(cfg), "sink_options": sink_options(cfg),
                  "trigger": trigger_kwargs(cfg)},
    }


def checkpoint_offsets(cfg: PipelineConfig) -> dict[str, Any] | None:
    """Where a restart resumes: the end offsets of the last committed batch (local checkpoints)."""
    location = cfg.checkpoint.location
    path = local_path(location) if location else None
    if path is None:
        return None
    reader = CheckpointReader(str(path))
    planned, committed = reader.offset_batches(), reader.commit_batches()
    if not planned:
        return None
    result: dict[str, Any] = {"last_planned_batch": planned[-1],
                              "last_committed_batch": committed[-1] if committed else None}
    entry = reader.offsets(committed[-1]) if committed else None
    if entry is not None:
        result["resume_from"] = [source_offsets(line) for line in entry.sources]
    latest = reader.latest_offsets()
    provider = latest.conf().get(PROVIDER_CONF) if latest is not None else None
    if provider:  # what a restart keeps whatever the file says (config.state_backend)
        result["state_store"] = describe_provider(provider)
    return result


def _partitions(cfg: PipelineConfig, metadata) -> list[tuple[str, int]]:
    s = cfg.source
    if s.assign:
        return [(t, p) for t, parts in s.assign for p in parts]
    names = [n for n in metadata.topics if (n in s.topics if s.topics else re.fullmatch(s.pattern or "", n))]
    return [(n, p) for n in sorted(names) for p in sorted(metadata.topics[n].partitions)]


def _start(spec: str, topic: str, partition: int, low: int, high: int) -> int | str:
    if spec == "earliest":
        return low
    if spec == "latest":
        return high
    wanted = json.loads(spec).get(topic, {}).get(str(partition))
    named: dict[int | None, int | str] = {None: "not listed (error at start)", -2: low, -1: high}
    return named.get(wanted, wanted)


def live_offsets(cfg: PipelineConfig, timeout_s: float = 10.0) -> dict[str, Any]:
    """Per source partition: earliest, latest and where ``starting_offsets`` starts (broker reads)."""
    from confluent_kafka import TopicPartition

    from kafka_eos import client_factory
    conf = {**cfg.source.kafka.client_conf(), "group.id": "kafka-eos-describe", "enable.auto.commit": "false",
            "isolation.level": "read_committed"}
    consumer = client_factory.consumer(conf, client_factory.Noise.SILENT)
    try:
        metadata = consumer.list_topics(timeout=timeout_s)
        result = {}
        for topic, partition in _partitions(cfg, metadata):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            result[f"{topic}-{partition}"] = {"earliest": low, "latest": high,
                                              "start": _start(cfg.source.starting_offsets, topic, partition, low, high)}
        return result
    finally:
        consumer.close()


class _PlanDumper(yaml.SafeDumper):
    """Multi-line strings (the SQL) as literal blocks."""


_PlanDumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def render(cfg: PipelineConfig, details: dict[str, Any], as_json: bool = False) -> str:
    """The plan with ``details`` (checkpoint, live offsets) as YAML or JSON; secrets redacted."""
    document = {**plan(cfg), **details}
    text = json.dumps(document, indent=2, default=str) if as_json else yaml.dump(
        document, Dumper=_PlanDumper, sort_keys=False, default_flow_style=False, width=120)
    return Redactor(cfg.secrets())(text)
