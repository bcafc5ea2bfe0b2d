"""A sink task's rows as the lists ``produce`` takes: each row's topic, partition, key, value and
headers, from the query's Arrow rows or from records the task read itself (``Records``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from kafka_eos.txn.writer.records import Records

if TYPE_CHECKING:  # rows arrive as Arrow batches; this module itself needs no pyarrow
    import pyarrow as pa

Rows: TypeAlias = "pa.RecordBatch | Records"  # Arrow rows of the query, or records the task read itself


def row_topics(batch: Rows, topic: str | None) -> list:
    """Each row's topic: the sink's option, else the row's 'topic' column (as in Spark's Kafka sink)."""
    if isinstance(batch, Records) or topic or "topic" not in batch.schema.names:
        return [topic] * batch.num_rows
    return batch.column("topic").to_pylist()


def row_partitions(batch: Rows) -> list[int] | None:
    """Each row's 'partition' column (-1 for null), or None without one."""
    if isinstance(batch, Records) or "partition" not in batch.schema.names:
        return None
    return [-1 if p is None else p for p in batch.column("partition").to_pylist()]


def row_columns(batch: Rows) -> tuple[list, list, list | None]:
    """keys, values, headers as (name, value) pairs (or None)."""
    n = batch.num_rows
    if isinstance(batch, Records):  # a task's own read of Kafka
        return batch.keys, batch.values, batch.headers
    names = batch.schema.names

    def column(name: str) -> list | None:
        return batch.column(name).to_pylist() if name in names else None

    headers = column("headers")
    if headers is not None:
        headers = [[(h["key"], h["value"]) for h in row] if row else None for row in headers]
    return column("key") or [None] * n, batch.column("value").to_pylist(), headers
