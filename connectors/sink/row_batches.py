"""Rows into Arrow batches, for a sink task where pyspark has no Arrow stream writer (4.0).

There Spark hands the sink's ``write`` an iterator of ``Row``; the task's writer
(``txn.kafka_writer``) takes Arrow batches, so the rows are gathered into batches of at most
``BATCH_ROWS`` under the Arrow form of the sink's Spark schema (nested rows, the headers, as
dicts). Order is kept: the i-th row of the input is the i-th of the output. pyspark gives a
``timestamp`` as a naive datetime in this process's local time zone: it is made an aware UTC one
(Arrow would read a naive one as UTC), so the record's CreateTime is the row's instant.
"""
from __future__ import annotations

from datetime import datetime, timezone
from itertools import islice
from typing import TYPE_CHECKING, Iterable, Iterator

from pyspark.sql.types import StructType

if TYPE_CHECKING:
    import pyarrow as pa

BATCH_ROWS = 10_000


def arrow_batches(rows: Iterable, schema: StructType, size: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """``rows`` (pyspark ``Row``) as Arrow record batches of at most ``size`` rows."""
    import pyarrow as pa
    from kafka_eos.connectors.spark_compat import arrow_schema

    arrow = arrow_schema(schema)
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield pa.RecordBatch.from_pylist([_utc(row.asDict(recursive=True)) for row in chunk], schema=arrow)


def _utc(row: dict) -> dict:
    """The row with a naive ``timestamp`` (pyspark's local time) as an aware UTC datetime."""
    at = row.get("timestamp")
    if isinstance(at, datetime) and at.tzinfo is None:
        row["timestamp"] = at.astimezone(timezone.utc)
    return row
