"""The shape of a pipeline, as its checkpoint records it: what ``checkpoint_compat`` compares
to tell whether a changed pipeline can resume the checkpoint.

    <checkpoint>/kafka-eos-pipeline/<seq>.json       (checkpoint.records: kafka: the same folder
                                                      in the Kafka store, ``config.records``)
        {"v": 1, "scans": 2, "stateful": false, "min_partitions": null, "max_tasks_per_batch": null,
         "transform": <fingerprint>, "decode": ..., "subscription": ..., "sink": ..., "dlq_topic": ...}

Invariants:
- Records are create-only (``LogStore.create``), numbered from 0; ``record_shape`` writes a new
  one only when the shape differs from the newest, so the newest is the shape of the pipeline
  that last started on the checkpoint.
- A record holds no secret, not even hashed: fingerprints are taken of text from which the
  pipeline's secrets are redacted (``config.redact``), with clusters and options in their
  redacted form.
- A record of another format version is refused (``ShapeRecordError``), never guessed at.
- For a checkpoint without records (written before them) ``recorded_shape`` falls back to what
  Spark's checkpoint tells: the source scans of its newest offset-log entry and whether ``state/``
  exists; every other part is unknown (None). Reading creates nothing.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from kafka_eos import KafkaEosError
from kafka_eos.config.model import DataFormat, PipelineConfig, SchemaRef, SinkSpec
from kafka_eos.config.records import kafka_records, register_records
from kafka_eos.config.redact import Redactor
from kafka_eos.config.rules import stateful
from kafka_eos.connectors.pipeline import checkpoint_files
from kafka_eos.connectors.pipeline.builder import scans_per_batch
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.option_map import OptionMap
from kafka_eos.secrets import redacted
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.log_store import LogReader, child
from kafka_eos.txn.log.stores import open_reader, open_store

FORMAT = 1
RECORDS = "kafka-eos-pipeline"
_RECORD = re.compile(r"([0-9]+)\.json")


class ShapeRecordError(KafkaEosError, ValueError):
    """A pipeline record beside the checkpoint is unreadable or of another format version."""


@dataclass(frozen=True)
class PipelineShape:
    """What of a pipeline a checkpoint depends on. None: unknown (a checkpoint without records)."""
    scans: int | None
    stateful: bool | None
    min_partitions: str | None = None   # source option minPartitions (input partitions per Kafka range)
    max_tasks_per_batch: str | None = None  # source option maxTasksPerBatch (ranges grouped into tasks)
    transform: str | None = None        # fingerprints: transform.sql/steps/watermark
    decode: str | None = None           # source format, key format, schema, headers
    subscription: str | None = None     # source topics/pattern/assign
    sink: str | None = None             # sink settings, guarantee, trigger
    dlq_topic: str | None = None
    recorded: bool = True               # False: inferred from Spark's checkpoint alone

    def to_json(self) -> str:
        data = {k: v for k, v in asdict(self).items() if k != "recorded"}
        return json.dumps({"v": FORMAT, **data}, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> "PipelineShape":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ShapeRecordError(f"{where}: not JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("v") != FORMAT:
            version = data.get("v") if isinstance(data, dict) else None
            raise ShapeRecordError(f"{where}: pipeline record format {version!r} is not {FORMAT}; "
                                   "check it with the kafka-eos build that wrote it")
        values: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls) if f.name != "recorded"}
        return cls(**values)


def _schema(schema: SchemaRef | None) -> Any:
    if schema is None:
        return None
    registry = schema.registry
    return {"text": schema.text or schema.inline, "file": None if schema.text else schema.file,
            "registry": None if registry is None else [registry.url, registry.subject]}


def _fingerprint(parts: Any, redact: Redactor) -> str:
    text = redact(json.dumps(parts, sort_keys=True, default=str))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _transform_parts(cfg: PipelineConfig) -> Any:
    t = cfg.transform
    sql = " ".join((t.sql or "").split())
    watermark = None if t.watermark is None else [t.watermark.column, t.watermark.delay_ms, t.watermark.expression]
    return {"sql": sql, "steps": [[s.kind, list(s.exprs)] for s in t.steps], "watermark": watermark}


def _key_parts(k: SinkSpec) -> dict[str, Any]:
    """The sink's key format and schema, where set (a sink shape recorded before keys had them is unchanged)."""
    if k.key_format is DataFormat.BYTES and k.key_schema is None:
        return {}
    return {"key_format": k.key_format.value, "key_schema": _schema(k.key_schema)}


def _sink_parts(cfg: PipelineConfig) -> Any:
    k = cfg.sink
    return {"cluster": k.kafka.redacted(), "topic": k.topic, "topic_column": k.topic_column,
            "columns": [k.key_column, k.value_column, k.headers_column] + ([k.partition_column] if k.partition_column
                                                                           else []), "format": k.format.value,
            "schema": _schema(k.schema), **_key_parts(k), "options": redacted(dict(k.options)),
            "timeouts": [k.transaction_timeout_ms, k.batch_margin_ms],
            "guarantee": cfg.guarantee.value, "trigger": str(cfg.checkpoint.trigger)}


def shape_of(cfg: PipelineConfig) -> PipelineShape:
    """The shape of ``cfg`` (from the file alone)."""
    s, redact = cfg.source, Redactor(cfg.secrets())
    options = OptionMap(redacted(dict(s.options)))
    return PipelineShape(
        scans=scans_per_batch(cfg), stateful=stateful(cfg.transform), min_partitions=options.get("minPartitions"),
        max_tasks_per_batch=options.get("maxTasksPerBatch"),
        transform=_fingerprint(_transform_parts(cfg), redact),
        decode=_fingerprint([s.format.value, s.key_format.value, _schema(s.schema), s.include_headers]
                            + ([_schema(s.key_schema)] if s.key_schema else []), redact),
        subscription=_fingerprint([list(s.topics), s.pattern, [[t, list(p)] for t, p in s.assign]], redact),
        sink=_fingerprint(_sink_parts(cfg), redact),
        dlq_topic=cfg.errors.dlq_topic if scans_per_batch(cfg) > 1 else None)


def _newest(reader: LogReader) -> tuple[int, PipelineShape] | None:
    numbers = sorted(int(m[1]) for m in map(_RECORD.fullmatch, reader.names()) if m)
    if not numbers:
        return None
    name = f"{numbers[-1]}.json"
    text = reader.read(name)
    if text is None:
        raise ShapeRecordError(f"{reader.location}/{name}: vanished while read")
    return numbers[-1], PipelineShape.from_json(text, f"{reader.location}/{name}")


def records_location(checkpoint: str) -> str:
    return child(checkpoint, RECORDS)


def shape_records(cfg: PipelineConfig) -> str | None:
    """Where the shape records of ``cfg`` are: in its Kafka store under ``checkpoint.records: kafka``
    (its cluster registered here), else beside its checkpoint; None without a checkpoint."""
    kafka = kafka_records(cfg)
    if kafka is not None:
        register_records(cfg)
        return child(kafka, RECORDS)
    return records_location(cfg.checkpoint.location) if cfg.checkpoint.location else None


def recorded_shape(checkpoint: str, records: str | None = None) -> PipelineShape | None:
    """The newest record at ``records`` (default: beside ``checkpoint``); else what Spark's
    checkpoint tells (``recorded`` False); None when the checkpoint has no offset-log entry."""
    spark = CheckpointReader(checkpoint).latest_offsets()
    if spark is None:
        return None
    newest = _newest(open_reader(records or records_location(checkpoint)))
    if newest is not None:
        return newest[1]
    return PipelineShape(scans=len(spark.sources), stateful=checkpoint_files.open_reader(checkpoint).exists("state"),
                         recorded=False)


def record_shape(cfg: PipelineConfig) -> PipelineShape | None:
    """Record the shape of ``cfg`` beside its checkpoint unless the newest record already says
    so; returns the record written (None: none was needed)."""
    location = shape_records(cfg)
    if location is None:
        return None
    shape = shape_of(cfg)
    newest = _newest(open_reader(location))
    if newest is not None and newest[1] == shape:
        return None
    try:
        open_store(location, StoreRole.RUNNER).create(f"{0 if newest is None else newest[0] + 1}.json",
                                                      shape.to_json())
    except FileExistsError:  # another start recorded its shape at the same moment: the newest says
        return None
    return shape
