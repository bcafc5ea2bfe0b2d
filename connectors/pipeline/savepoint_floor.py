"""The floor of a pipeline started from a savepoint, in its plan (``offsets.rewind.Floor``; design:
docs/savepoints.md, 'Replay with a floor').

The new checkpoint's restore record (``txn.log.savepoints.RestoreStart``: W0, the savepoint's
watermark W and end offsets) is read at every build of the query on that checkpoint, so every
batch of it, the replay and every restart, has the same plan:
- main branch (before the transform, so before any aggregation): only rows with an event time
  ``>= W0`` (null: dropped). A replayed row below it was counted or sent to the late topic by the
  old query; a new row below it is in a window closed at W (late: the late branch takes it);
- late branch: a replayed row with a null time or one ``< W0`` is dropped (the old query handled
  it); the others are judged with ``max(watermark, W)`` (``late_records.late_fn``'s ``floor_ms``);
- DLQ branch: every replayed row is dropped (the old query sent the undecodable ones already).
A checkpoint without a restore record gets its plan unchanged; a stateless restore (no W0) has
nothing replayed, so no floor.
"""
from __future__ import annotations

import functools
import operator

from pyspark.sql import Column, DataFrame
from pyspark.sql.functions import col, expr, lit

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import records_home
from kafka_eos.offsets.model import Offsets
from kafka_eos.txn.log.savepoints import RestoreStart, read_restore


def restored(cfg: PipelineConfig) -> RestoreStart | None:
    """The restore record of ``cfg``'s checkpoint (None: not started from a savepoint)."""
    return read_restore(records_home(cfg)) if cfg.checkpoint.location else None


def keeps(column: str, w0_ms: int) -> Column:
    """Rows in a window open at the savepoint: an event time at or after W0."""
    return col(column).isNotNull() & (col(column) >= expr(f"timestamp_millis({int(w0_ms)})"))


def replayed(end: Offsets) -> Column:
    """Rows the old query read: an offset below the savepoint's end of their partition."""
    parts = [(col("topic") == lit(topic)) & (col("partition") == lit(partition)) & (col("offset") < lit(offset))
             for (topic, partition), offset in sorted(end.items())]
    return functools.reduce(operator.or_, parts) if parts else lit(False)


def floor_main(df: DataFrame, cfg: PipelineConfig) -> DataFrame:
    """The main branch's rows, after the watermark and before the transform."""
    start, w = restored(cfg), cfg.transform.watermark
    if start is None or start.w0_ms is None or w is None:
        return df
    return df.where(keeps(w.column, start.w0_ms))


def floor_late(decoded: DataFrame, column: str, start: RestoreStart | None) -> DataFrame:
    """The late branch's rows (decoded, with the event-time ``column`` and the source position)."""
    if start is None or start.w0_ms is None:
        return decoded
    return decoded.where(~(replayed(start.end) & ~keeps(column, start.w0_ms)))


def floor_dlq(decoded: DataFrame, cfg: PipelineConfig) -> DataFrame:
    """The DLQ branch's rows (decoded, with the source position)."""
    start = restored(cfg)
    if start is None or start.w0_ms is None:
        return decoded
    return decoded.where(~replayed(start.end))
