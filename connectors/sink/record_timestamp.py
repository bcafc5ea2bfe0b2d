"""The sink's ``timestamp`` column: each record's CreateTime (issue 66, item 3).

Spark's Kafka sink cannot set a record's timestamp (SPARK-50160, closed unmerged); the kafka-eos
sink takes it from a ``timestamp`` column of its input, a Spark ``timestamp`` or a ``long`` of
epoch ms (a null row: the producer's clock; ``txn/writer/record_times.py`` turns it into epoch ms).
A pipeline's ``sink.timestamp_column`` names the column (``select_exprs``): by default
``timestamp``, used when the transform's result has one (the source's, kept by a copy, or one the
transform made: ``window.end AS timestamp``); ``null``: none; another name, a nested field
included (``window.end``), must exist. Enforced here, before the query starts: a column of another
type is refused naming it and the fix (``column_problem``).
"""
from __future__ import annotations

from pyspark.sql.types import DataType, LongType, StructType, TimestampType

TIMESTAMP = "timestamp"
DEFAULT = TIMESTAMP  # sink.timestamp_column when the YAML does not set it: used where the rows have it
KEY = "sink.timestamp_column"


def column_type(schema: StructType, path: str) -> DataType | None:
    """The type of ``path`` (``a`` or a nested field ``a.b``) in ``schema``, or None if absent."""
    found: DataType = schema
    for part in path.split("."):
        if not isinstance(found, StructType) or part not in found.names:
            return None
        found = found[part].dataType
    return found


def column_problem(name: str, data_type: DataType) -> str | None:
    """Why a column of ``data_type`` cannot be the records' timestamps, or None."""
    if isinstance(data_type, (TimestampType, LongType)):
        return None
    return (f"column {name!r} is {data_type.simpleString()}: a record timestamp is a timestamp or a long (epoch "
            f"milliseconds); fix: CAST(... AS TIMESTAMP) or a long of epoch ms in the query")


def _ident(path: str) -> str:
    return ".".join("`" + part.replace("`", "``") + "`" for part in path.split("."))


def select_exprs(schema: StructType, column: str | None) -> list[str]:
    """``selectExpr`` arguments giving the sink its ``timestamp`` column from ``column`` of rows of
    ``schema`` (none for ``column`` None, or the default absent); ``ValueError`` naming
    ``sink.timestamp_column`` and the fix for a column that is absent or of another type."""
    if not column:
        return []
    data_type = column_type(schema, column)
    if data_type is None:
        if column == DEFAULT:
            return []
        raise ValueError(f"{KEY}: the transform gives no column {column!r} (it gives {sorted(schema.names)}); fix: "
                         f"select an expression AS {column} in transform, or change {KEY} (null: the producer's clock)")
    problem = column_problem(column, data_type)
    if problem:
        raise ValueError(f"{KEY}: {problem}, or set {KEY}: null (the producer's clock)")
    return [f"{_ident(column)} AS {TIMESTAMP}"]
