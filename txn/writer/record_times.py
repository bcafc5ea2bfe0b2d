"""Each record's timestamp (Kafka CreateTime, epoch ms) as the task writes it (issue 66, item 3).

The rows' ``timestamp`` column (Spark's ``timestamp`` or ``long`` epoch ms; a ``Records``' own
``timestamps``, copied from the source records) becomes the record's CreateTime. Enforced here,
before anything of the batch is produced:
- a row without a timestamp (null; a copied record the source gave none) gets the task's clock,
  read once per batch (``now_ms``): the producer's clock, as without a timestamp column, but
  chosen here, so the write evidence covers every record's timestamp;
- a column timestamp before 1970-01-01T00:00:00.001 is refused (``TimestampError`` names the row
  and the fix): Kafka reads -1 as "none" and librdkafka writes 0 as "now", so such a record would
  not carry what the row said; a copied record's is replaced by the task's clock (a copy never
  fails on its source);
- without a timestamp column the batch is unchanged and librdkafka stamps each record itself.
pyarrow is loaded only for Arrow rows (the driver imports the writer and needs none).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from kafka_eos.txn.writer.records import Records

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_eos.txn.writer.kafka_writer import Rows

TIMESTAMP = "timestamp"
_PER_MS = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}  # an Arrow timestamp unit's ticks per ms


class TimestampError(ValueError):
    """A row's timestamp cannot be a record's CreateTime; the message names the row and the fix."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def has_timestamps(batch: "Rows") -> bool:
    if isinstance(batch, Records):
        return batch.timestamps is not None
    return TIMESTAMP in batch.schema.names


def stamped(batch: "Rows", clock_ms: int) -> "Rows":
    """``batch`` with every row's timestamp as epoch ms (Arrow rows: an int64 ``timestamp``
    column), a missing one ``clock_ms``; unchanged without timestamps."""
    if not has_timestamps(batch):
        return batch
    if isinstance(batch, Records):
        times = batch.timestamps or []
        if None in times or min(times, default=1) < 1:
            times = [t if t is not None and t > 0 else clock_ms for t in times]
        return replace(batch, timestamps=times)
    import pyarrow.compute as pc
    at = batch.schema.get_field_index(TIMESTAMP)
    ms = epoch_ms(batch.column(at))
    if ms.null_count < len(ms) and pc.min(ms).as_py() < 1:
        row = pc.index(pc.less(ms, 1), True).as_py()
        key = batch.column("key")[row].as_py() if "key" in batch.schema.names else None
        raise TimestampError(f"row {row} (key={key!r:.60}) has timestamp {ms[row].as_py()} ms since the epoch: a "
                             "record's CreateTime is 1 ms after 1970-01-01 or later (Kafka reads -1 as none, librdkafka "
                             "writes 0 as now); fix the column, or give such rows null (the producer's clock)")
    return batch.set_column(at, TIMESTAMP, ms.fill_null(clock_ms))


def epoch_ms(column: "pa.Array") -> "pa.Array":
    """A timestamp column (any unit; its zone does not matter: Arrow keeps UTC instants) or an
    integer column of epoch ms, as int64 epoch ms (a timestamp's sub-millisecond part dropped)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    kind = column.type
    if pa.types.is_timestamp(kind):
        ticks = column.cast(pa.int64())
        per_ms = _PER_MS[kind.unit]
        if per_ms is None:
            return pc.multiply(ticks, 1000)
        return ticks if per_ms == 1 else pc.divide(ticks, per_ms)  # toward zero: the same from the epoch on
    if pa.types.is_integer(kind):
        return column.cast(pa.int64())
    raise TimestampError(f"the 'timestamp' column is {kind}: a record timestamp is a timestamp or a long (epoch ms); "
                         "cast it to one of them, or leave the column out (the producer's clock)")


def earliest(times: list | None, before: int | None) -> int | None:
    """The smaller of ``before`` and the smallest of ``times`` (None for none)."""
    if not times:
        return before
    least = min(times)
    return least if before is None else min(before, least)


def timestamps_of(batch: "Rows") -> list | None:
    """A stamped batch's timestamps (epoch ms, one per row), or None without any."""
    if isinstance(batch, Records):
        return batch.timestamps
    if TIMESTAMP not in batch.schema.names:
        return None
    return batch.column(TIMESTAMP).to_pylist()
