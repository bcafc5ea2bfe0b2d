"""EventTimes: the event times each batch read, recorded beside the sink log, from which a savepoint
finds where its replay starts (``kafka_eos.offsets.rewind``).

Invariants enforced here:
- a record is ``_event-times/<batch, 12 digits>.json`` {v, batch, min_ms, max_ms, watermark_ms,
  coverage[, start]}: one per batch, created through the store of its location (``stores.open_store``:
  create-only), its version read by ``log_store.versioned``. ``min_ms``/``max_ms`` are None for a
  batch without rows, ``watermark_ms`` is the watermark the batch applied (None when not reported),
  ``start`` where the batch started (``{topic: {partition: offset}}``; absent when not known), so a
  rewind reaches back past the batches Spark's offset log still keeps.
- recording a batch that has a record keeps the record (a replayed batch reads the same offsets,
  so the same times) and returns it; the caller may compare.
- ``coverage`` says which rows the times are of: ``watermark_operator`` (Spark's progress
  ``eventTime``: the rows that reached the plan's watermark operator, after the filters Spark's
  optimizer pushes below it) or ``decoded`` (every decoded source record). A rewind for a transform
  that may window rows the old one filtered out needs ``decoded``.
- reading creates nothing; a missing folder reads as no records; other names are skipped.
- ``from_progress`` reads Spark's ``StreamingQueryProgress.eventTime`` (pyspark 4.0 to 4.3: ``max``,
  ``min``, ``avg`` of the plan's first watermark operator that had rows, absent without rows, and
  ``watermark``, the one the batch applied; ISO-8601 UTC strings with milliseconds).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal, Mapping

from kafka_eos.txn.log.log_store import LogReader, child, versioned
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.stores import open_reader, open_store

FOLDER = "_event-times"
FORMAT = 1
COVERAGES = ("watermark_operator", "decoded")
Coverage = Literal["watermark_operator", "decoded"]
_NAME = re.compile(r"^(\d{12})\.json$")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class BatchTimes:
    batch: int
    min_ms: int | None
    max_ms: int | None
    watermark_ms: int | None
    coverage: Coverage = "watermark_operator"
    start: dict[str, dict[str, int]] | None = None  # where the batch started ({topic: {partition: offset}})

    def __post_init__(self) -> None:
        if self.coverage not in COVERAGES:
            raise ValueError(f"event-time coverage {self.coverage!r} is not one of {COVERAGES}")
        if (self.min_ms is None) != (self.max_ms is None):
            raise ValueError(f"batch {self.batch}: min and max event times are both known or both None")

    def to_dict(self) -> dict:
        data = asdict(self)
        if self.start is None:  # not known (a record of a build before start offsets were kept)
            data.pop("start")
        return {"v": FORMAT, **data}


def record_name(batch: int) -> str:
    return f"{batch:012d}.json"


def _folder(log_location: str) -> str:
    return child(log_location, FOLDER)


def parse_time(text: str) -> int:
    """Milliseconds since the epoch of Spark's ISO-8601 UTC form (``2016-12-05T20:54:20.827Z``)."""
    parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return (parsed - _EPOCH) // timedelta(milliseconds=1)


def from_progress(batch: int, event_time: Mapping[str, str], coverage: Coverage = "watermark_operator",
                  start: Mapping[tuple[str, int], int] | None = None) -> BatchTimes:
    """The record of a batch from its progress's ``eventTime`` map (and its start offsets, if known)."""
    def at(key: str) -> int | None:
        return parse_time(event_time[key]) if event_time.get(key) else None
    return BatchTimes(batch, at("min"), at("max"), at("watermark"), coverage, _topics(start))


def _topics(offsets: Mapping[tuple[str, int], int] | None) -> dict[str, dict[str, int]] | None:
    if offsets is None:
        return None
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def start_of(times: BatchTimes) -> dict[tuple[str, int], int] | None:
    """The batch's start offsets as ``plan_rewind`` takes them (None: not recorded)."""
    if times.start is None:
        return None
    return {(topic, int(p)): int(o) for topic, parts in times.start.items() for p, o in parts.items()}


def record_batch(log_location: str, times: BatchTimes, role: StoreRole | None = None) -> tuple[BatchTimes, bool]:
    """Create the record of ``times.batch`` (a Kafka store: as ``role``, default the process's);
    (the record kept, whether this call created it). Raises what the store raises,
    ``SinkLogError`` for an existing record of another format."""
    store = open_store(_folder(log_location), role)
    name = record_name(times.batch)
    try:
        store.create(name, json.dumps(times.to_dict()))
        return times, True
    except FileExistsError:
        kept = _read(store, name)
        if kept is None:  # deleted (pruned) between the create and the read: nothing to keep
            raise
        return kept, False


def _read(reader: LogReader, name: str) -> BatchTimes | None:
    text = reader.read(name)
    if text is None:
        return None
    data = versioned(text, f"{FOLDER}/{name}", "event-time record", FORMAT)
    return BatchTimes(int(data["batch"]), data["min_ms"], data["max_ms"], data["watermark_ms"], data["coverage"],
                      data.get("start"))


def read_times(log_location: str, from_batch: int = 0) -> dict[int, BatchTimes]:
    """Every record of a batch at or after ``from_batch``, by batch id; creates nothing."""
    reader = open_reader(_folder(log_location))
    out: dict[int, BatchTimes] = {}
    for name in reader.names():
        match = _NAME.match(name)
        if match is None or int(match[1]) < from_batch:
            continue
        times = _read(reader, name)
        if times is not None:
            out[times.batch] = times
    return out


def max_times(records: Mapping[int, BatchTimes]) -> dict[int, int | None]:
    """``plan_rewind``'s ``max_times``: batch id -> its largest event time (None: no rows)."""
    return {batch: t.max_ms for batch, t in records.items()}


def prefix_bound(records: Mapping[int, BatchTimes], delay_ms: int) -> int | None:
    """No row before the earliest recorded batch has a later event time than this: that batch's
    watermark plus the watermark delay (None: no record, or its watermark unknown)."""
    if not records:
        return None
    first = records[min(records)]
    return None if first.watermark_ms is None else first.watermark_ms + delay_ms


def prune(log_location: str, below_batch: int, role: StoreRole | None = None) -> int:
    """Delete the records of batches below ``below_batch``; how many. Safe for exactness: a rewind
    then bounds those batches by ``prefix_bound`` or refuses, it never guesses."""
    store = open_store(_folder(log_location), role)
    gone = [n for n in store.names() if (m := _NAME.match(n)) and int(m[1]) < below_batch]
    for name in gone:
        store.delete(name)
    return len(gone)
