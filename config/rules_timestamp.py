"""The rule of ``sink.timestamp_column`` (each record's CreateTime), as far as a file tells.

Without ``transform.sql`` and ``select`` steps the sink's rows are the decoded source's, whose
columns and types are known here: a column that is not a timestamp or a long, or that the rows do
not have, is refused naming it and the fix. A transform's own columns are known only to Spark:
the build refuses them before the query starts (``connectors/sink/record_timestamp.py``).
"""
from __future__ import annotations

from kafka_eos.config.model import DataFormat, PipelineConfig
from kafka_eos.config.violations import Context, Violation

KEY = "sink.timestamp_column"
DEFAULT = "timestamp"
_FIX = ("name a timestamp column (the source's 'timestamp', a transform's CAST(... AS TIMESTAMP) AS ts, "
        "window.end), a long of epoch ms, or null (the producer's clock)")
# the decoded source's columns and their types (connectors/schema.py source_schema)
_SOURCE = {"key": "binary or string", "value": "binary", "topic": "string", "partition": "int", "offset": "bigint",
           "timestamp": "timestamp", "timestampType": "int", "headers": "array<struct<key,value>>"}
_TIMES = ("timestamp", "bigint")


def _source_columns(cfg: PipelineConfig) -> dict[str, str | None] | None:
    """The sink's rows' columns when the transform keeps the source's (None: the transform decides)."""
    t = cfg.transform
    if t.sql or any(step.kind == "select" for step in t.steps):
        return None
    columns: dict[str, str | None] = dict(_SOURCE)
    columns["value"] = {DataFormat.BYTES: "binary", DataFormat.STRING: "string"}.get(cfg.source.format, "struct")
    if not cfg.source.include_headers:
        del columns["headers"]
    if t.watermark is not None and t.watermark.expression:
        columns[t.watermark.column] = None  # defined by an expression: its type is Spark's to tell
    return columns


def timestamp_column(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    name = cfg.sink.timestamp_column
    if name is None:
        return []
    if not name.strip():
        return [Violation(KEY, "is empty", "name a column, or write null for the producer's clock")]
    columns = _source_columns(cfg)
    if columns is None:
        return []
    top, nested = name.split(".", 1)[0], "." in name
    if top not in columns:
        if name == DEFAULT:
            return []
        return [Violation(KEY, f"the sink's rows have no column {top!r} (without transform.sql they are the "
                          f"source's: {', '.join(sorted(columns))})", _FIX)]
    kind = columns[top]
    if kind is None or kind == "struct" and nested or kind in _TIMES and not nested:
        return []  # fine, or a decoded value's field or a column whose type only Spark knows: the build checks it
    problem = f"column {top!r} is {kind} and has no fields" if nested else f"column {name!r} is {kind}"
    return [Violation(KEY, f"{problem}: a record timestamp is a timestamp or a long (epoch ms)", _FIX)]
