"""Savepoint records: what a new checkpoint needs to go on exactly where an old one stopped
(docs/savepoints.md), the old sink log's mark that it was saved, and the new checkpoint's start.

    <location>/savepoint.json          {v, pipeline, checkpoint, sink_log, prefix, last_batch, end,
                                        watermark_ms, delay_ms, window, shape, state, batches,
                                        prefix_bound_ms, rewind, pyspark, created_ms}
    <old sink log>/_savepoint/taken.json      {v, location, last_batch}: the old checkpoint writes nothing more
    <new checkpoint>/kafka-eos-restore/start.json
                                       {v, savepoint, w0_ms, watermark_ms, end, rewind}: the floor of every batch

Invariants enforced here:
- Every record is created once, through the store of its location (``stores.open_store``), with
  its format version ``v`` (``log_store.versioned``: another version is refused by name). Writing
  a record that exists keeps it: the same content is success, another content ``SavepointConflict``.
- Offsets are kept as ``{topic: {partition: offset}}`` (partition as text, as Spark's JSON has it).
- Nothing secret: the records hold locations, offsets, times, fingerprints and names only (the
  caller passes the shape's fingerprints, which are taken of redacted text).
- Reading creates nothing.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from kafka_eos import KafkaEosError
from kafka_eos.offsets.model import Offsets
from kafka_eos.txn.log.log_store import child, versioned
from kafka_eos.txn.log.stores import open_reader, open_store

FORMAT = 1
RECORD = "savepoint.json"
TAKEN_FOLDER, TAKEN = "_savepoint", "taken.json"
RESTORE_FOLDER, RESTORE = "kafka-eos-restore", "start.json"


class SavepointConflict(KafkaEosError, ValueError):
    """A savepoint record exists with other content than the one being written."""


class SavepointUnreadable(KafkaEosError, ValueError):
    """No savepoint record at the location given, or one this build cannot read."""


class SavepointTaken(KafkaEosError, RuntimeError):
    """A start of a checkpoint a savepoint was taken of: it writes nothing more."""


def encode_offsets(offsets: Mapping[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def decode_offsets(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}


@dataclass(frozen=True)
class BatchRow:
    """One batch of the rewind table: where it started, and its event times (None: not recorded)."""
    batch: int
    start: Offsets
    max_ms: int | None = None
    min_ms: int | None = None
    recorded: bool = False       # whether an event-time record of the batch exists
    coverage: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "start": encode_offsets(self.start)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BatchRow":
        return cls(**{**data, "start": decode_offsets(data["start"])})


@dataclass(frozen=True)
class Savepoint:
    pipeline: str
    checkpoint: str
    sink_log: str
    prefix: str
    last_batch: int
    end: Offsets
    watermark_ms: int
    delay_ms: int | None
    window: dict[str, Any] | None       # offsets.rewind.WindowSpec's fields of the saved pipeline
    shape: dict[str, Any]               # pipeline_shape.PipelineShape's fields (fingerprints)
    state: dict[str, Any]               # the state store provider and shuffle partitions the checkpoint fixed
    batches: tuple[BatchRow, ...]
    prefix_bound_ms: int | None
    pyspark: str
    created_ms: int
    rewind: dict[str, Any] | None = None  # the rewind of the unchanged window: batch, w0_ms, offsets
    sink_last_batch: int | None = None
    location: str = field(default="", compare=False)  # where it was read from (not stored)

    def to_json(self) -> str:
        data = {k: v for k, v in asdict(self).items() if k != "location"}
        data.update(end=encode_offsets(self.end), batches=[b.to_dict() for b in self.batches])
        return json.dumps({"v": FORMAT, **data}, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> "Savepoint":
        data = versioned(text, where, "savepoint record", FORMAT)
        data.pop("v")
        data.update(end=decode_offsets(data["end"]), batches=tuple(BatchRow.from_dict(b) for b in data["batches"]))
        return cls(**data, location=where)

    def max_times(self) -> dict[int, int | None]:
        """``plan_rewind``'s ``max_times``: the recorded batches only (an unrecorded one is unknown)."""
        return {b.batch: b.max_ms for b in self.batches if b.recorded}

    def starts(self) -> dict[int, Offsets]:
        return {b.batch: dict(b.start) for b in self.batches}


@dataclass(frozen=True)
class Taken:
    location: str
    last_batch: int


@dataclass(frozen=True)
class RestoreStart:
    """The new checkpoint's start from a savepoint: the floor its builder applies to every batch."""
    savepoint: str
    w0_ms: int | None            # None: a stateless restore (nothing replayed, no floor)
    watermark_ms: int
    end: Offsets
    rewind: Offsets
    rewind_batch: int | None

    def to_json(self) -> str:
        data = {**asdict(self), "end": encode_offsets(self.end), "rewind": encode_offsets(self.rewind)}
        return json.dumps({"v": FORMAT, **data}, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> "RestoreStart":
        data = versioned(text, where, "restore record", FORMAT)
        data.pop("v")
        data.update(end=decode_offsets(data["end"]), rewind=decode_offsets(data["rewind"]))
        return cls(**data)


def _create_once(location: str, name: str, text: str, what: str) -> bool:
    """Create ``name``; True if created, False if it exists with ``text``; else ``SavepointConflict``."""
    try:
        open_store(location).create(name, text)
        return True
    except FileExistsError:
        kept = open_reader(location).read(name)
        if kept is not None and json.loads(kept) == json.loads(text):
            return False
        raise SavepointConflict(f"{child(location, name)}: a {what} exists with other content; it is kept "
                                "(records are create-only): give another location") from None


def write_savepoint(location: str, savepoint: Savepoint) -> bool:
    """Create the record at ``location`` (a folder); False when the same record is there already."""
    return _create_once(location, RECORD, savepoint.to_json(), "savepoint record")


def read_savepoint(location: str) -> Savepoint:
    text = open_reader(location).read(RECORD)
    if text is None:
        raise SavepointUnreadable(f"{child(location, RECORD)}: no savepoint record there; give the location "
                                  "`kafka-eos savepoint` printed")
    try:
        return Savepoint.from_json(text, location)
    except (ValueError, KeyError, TypeError) as exc:
        raise SavepointUnreadable(f"{child(location, RECORD)}: not a savepoint record this build reads ({exc})") from None


def default_location(sink_log: str) -> str:
    """Where a savepoint goes without ``--to``: beside the saved pipeline's sink log."""
    return child(sink_log, TAKEN_FOLDER)


def mark_taken(sink_log: str, location: str, last_batch: int) -> Taken:
    """Mark the old sink log saved (once); the mark kept (an existing one wins)."""
    text = json.dumps({"v": FORMAT, "location": location, "last_batch": last_batch}, sort_keys=True)
    folder = child(sink_log, TAKEN_FOLDER)
    try:
        open_store(folder).create(TAKEN, text)
    except FileExistsError:
        pass
    kept = taken(sink_log)
    assert kept is not None  # created above, or by an earlier savepoint
    return kept


def taken(sink_log: str) -> Taken | None:
    """The mark of a savepoint taken of the pipeline of ``sink_log`` (None: none)."""
    folder = child(sink_log, TAKEN_FOLDER)
    text = open_reader(folder).read(TAKEN)
    if text is None:
        return None
    data = versioned(text, child(folder, TAKEN), "savepoint mark", FORMAT)
    return Taken(str(data["location"]), int(data["last_batch"]))


def check_not_taken(sink_log: str, checkpoint: str) -> None:
    """Raise ``SavepointTaken`` when a savepoint was taken of the pipeline of ``sink_log`` (reads only)."""
    mark = taken(sink_log)
    if mark is not None:
        raise SavepointTaken(
            f"a savepoint was taken of checkpoint {checkpoint} after batch {mark.last_batch} ({mark.location}): the "
            "checkpoint writes nothing more. The way on: the pipeline (changed or not) with a new "
            f"checkpoint.location, started by `kafka-eos run <new.yaml> --from-savepoint {mark.location}`")


def write_restore(checkpoint: str, start: RestoreStart) -> bool:
    return _create_once(child(checkpoint, RESTORE_FOLDER), RESTORE, start.to_json(), "restore record")


def read_restore(checkpoint: str) -> RestoreStart | None:
    folder = child(checkpoint, RESTORE_FOLDER)
    text = open_reader(folder).read(RESTORE)
    return None if text is None else RestoreStart.from_json(text, child(folder, RESTORE))
