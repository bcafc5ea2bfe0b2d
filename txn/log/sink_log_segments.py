"""Segments of the sink log: old committed batches rolled into one create-only file per 1,000.

Layout: ``<log>/_segments/<first:012d>-<last:012d>.json.gz``, the gzip of compact JSON
``{"v": 1, "first": ..., "last": ..., "records": [<each batch's final record, BatchRecord.to_dict>]}``.

Invariants this module enforces (``SegmentRoller.prune``, run by ``SinkLog.prune`` after each commit):
- the newest ``keep`` batches (``sink_log.KEEP_BATCHES``) always stay loose files (recovery,
  status and the decision guard read only them);
- only COMMITTED batches are rolled or dropped, oldest first; a batch that is not committed stops
  the walk (it and everything newer stay loose);
- a segment holds ``SEGMENT_BATCHES`` consecutive loose batches and is created (create-only,
  ``LogStore.create_bytes``) BEFORE their loose files are deleted: a reader that listed the loose
  files first and the segments second never misses a batch. A loose batch at or below the newest
  segment's ``last`` is already rolled (a copy of its segment's record): each prune deletes the
  files of ``ROLLED_DELETES`` of them, so a roll's deletes are spread over the next commits (and a
  crash after a roll leaves nothing but copies);
- evidence retention: a committed batch older than ``retention_ms`` (by its ``committed_at_ms``)
  beyond the newest ``keep`` is deleted without being rolled, and a segment is deleted when the
  newest ``committed_at_ms`` of its records is older than that (segments oldest first, stopping at
  the first one still kept: the time grows with the batch id; each segment's time is read once per
  writer, so a prune reads a segment only when the oldest one changed). A segment with no
  ``committed_at_ms`` at all (records of builds before it) counts as expired;
- a segment's batch ids are known from its name alone: ``first``..``last`` (an id the engine
  skipped inside that range reads as absent).
"""
from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from kafka_eos.txn.log.log_store import LogReader, LogStore, child, versioned
from kafka_eos.txn.log.stores import open_reader, open_store
from kafka_eos.txn.protocol.states import BatchState

SEGMENTS_DIR = "_segments"
SEGMENT_BATCHES = 1000
ROLLED_DELETES = 20  # rolled batches whose loose files one prune deletes
SEGMENT_FORMAT = 1
DEFAULT_EVIDENCE_RETENTION_MS = 7 * 24 * 3600 * 1000
_NAME = re.compile(r"^(\d{12})-(\d{12})\.json\.gz$")


@dataclass(frozen=True, order=True)
class Segment:
    first: int
    last: int

    @property
    def name(self) -> str:
        return f"{self.first:012d}-{self.last:012d}.json.gz"

    def holds(self, batch_id: int) -> bool:
        return self.first <= batch_id <= self.last


def parse_name(name: str) -> Segment | None:
    match = _NAME.match(name)
    return Segment(int(match[1]), int(match[2])) if match else None


def encode(segment: Segment, records: Sequence[dict]) -> bytes:
    body = {"v": SEGMENT_FORMAT, "first": segment.first, "last": segment.last, "records": list(records)}
    return gzip.compress(json.dumps(body, separators=(",", ":")).encode(), compresslevel=6)


def decode(data: bytes, where: str) -> dict[int, dict]:
    """batch id -> its record as a dict (``BatchRecord.from_dict`` makes it a record)."""
    body = versioned(gzip.decompress(data).decode(), where, "sink log segment", SEGMENT_FORMAT)
    return {int(r["batch"]): r for r in body["records"]}


def newest_commit_ms(records: Sequence[dict]) -> float:
    """The newest ``committed_at_ms`` among record dicts (0: none has one)."""
    return max((float(r.get("metrics", {}).get("committed_at_ms", 0)) for r in records), default=0.0)


def _committed(record: dict | None) -> bool:
    return record is not None and record.get("state") == BatchState.COMMITTED.value


def _expired(record: dict | None, cutoff: float) -> bool:
    """A committed record whose ``committed_at_ms`` is before ``cutoff``; one without the time (an
    accepted loss) is not: it is rolled, and its segment judged by its neighbours' times."""
    if record is None or not _committed(record) or "committed_at_ms" not in record.get("metrics", {}):
        return False
    return float(record["metrics"]["committed_at_ms"]) < cutoff


class SegmentReader:
    """Reads the segments of the sink log at ``location``; creates nothing. Keeps the last decoded one."""

    def __init__(self, location: str) -> None:
        self.location = child(location, SEGMENTS_DIR)
        self._store: LogReader | None = None
        self._cached: tuple[Segment, dict[int, dict]] | None = None

    @property
    def store(self) -> LogReader:
        if self._store is None:  # built on first use: a remote store costs a client
            self._store = open_reader(self.location)
        return self._store

    def segments(self) -> list[Segment]:
        return sorted(s for s in map(parse_name, self.store.names()) if s is not None)

    def cached(self, batch_id: int) -> dict | None:
        """The record of ``batch_id`` if the last decoded segment holds it (no I/O: a segment's
        records are final, so no loose file can be newer)."""
        if self._cached is not None and self._cached[0].holds(batch_id):
            return self._cached[1].get(batch_id)
        return None

    def find(self, batch_id: int) -> dict | None:
        """The record dict of ``batch_id`` from the segment holding it, or None."""
        if self._cached is not None and self._cached[0].holds(batch_id):
            return self._cached[1].get(batch_id)
        segment = next((s for s in self.segments() if s.holds(batch_id)), None)
        records = None if segment is None else self.records(segment)
        return None if records is None else records.get(batch_id)

    def records(self, segment: Segment) -> dict[int, dict] | None:
        """The records of ``segment`` (None: deleted meanwhile)."""
        if self._cached is not None and self._cached[0] == segment:
            return self._cached[1]
        data = self.store.read_bytes(segment.name)
        if data is None:
            return None
        self._cached = (segment, decode(data, f"{self.location}/{segment.name}"))
        return self._cached[1]


class SegmentRoller(SegmentReader):
    """The driver's side: rolls old loose batches into segments and applies the retention."""

    def __init__(self, location: str, retention_ms: int = DEFAULT_EVIDENCE_RETENTION_MS) -> None:
        super().__init__(location)
        self.retention_ms = retention_ms
        self._known: list[Segment] | None = None  # listed once, then kept as this writer changes them
        self._ages: dict[Segment, float] = {}  # newest committed_at_ms of a segment read for the retention

    def writable(self) -> LogStore:
        if not isinstance(self._store, LogStore):  # created on first write: a log with no segment has no folder
            self._store = open_store(self.location)
        return self._store

    def prune(self, loose: Sequence[int], final: Callable[[int], dict | None],
              drop: Callable[[int], None], keep: int, now_ms: float) -> list[int]:
        """``loose``: the loose batch ids, ascending; ``final(id)``: a loose batch's newest record
        (``BatchRecord.to_dict``); ``drop(id)``: delete a loose batch's files. Returns the batches
        rolled now (their records are in a segment)."""
        if self._known is None:
            self._known = self.segments()
        self._expire(now_ms)  # no I/O unless the oldest segment is new to this writer
        rolled_to = self._known[-1].last if self._known else -1
        behind = loose[:max(len(loose) - keep, 0)]
        for batch_id in [b for b in behind if b <= rolled_to][:ROLLED_DELETES]:
            drop(batch_id)
        old = [b for b in behind if b > rolled_to]
        cutoff, rolled = now_ms - self.retention_ms, []
        while old and _expired(final(old[0]), cutoff):              # expired: deleted, not rolled
            drop(old.pop(0))
        while len(old) >= SEGMENT_BATCHES:                           # whole segments of committed batches
            chunk = [final(b) for b in old[:SEGMENT_BATCHES]]
            if not all(_committed(r) for r in chunk):
                break
            self._roll([r for r in chunk if r is not None])  # their files: ROLLED_DELETES a prune
            rolled += old[:SEGMENT_BATCHES]
            del old[:SEGMENT_BATCHES]
        return rolled

    def _roll(self, chunk: list[dict]) -> None:
        segment = Segment(int(chunk[0]["batch"]), int(chunk[-1]["batch"]))
        try:
            self.writable().create_bytes(segment.name, encode(segment, chunk))
        except FileExistsError:
            pass  # another run rolled them (its segment holds the same final records)
        assert self._known is not None
        self._known.append(segment)
        self._ages[segment] = newest_commit_ms(chunk)

    def _expire(self, now_ms: float) -> None:
        """Delete segments past the retention, oldest first, until the first one still kept."""
        assert self._known is not None
        cutoff = now_ms - self.retention_ms
        while self._known:
            oldest = self._known[0]
            if oldest not in self._ages:
                records = self.records(oldest)
                self._ages[oldest] = 0.0 if records is None else newest_commit_ms(list(records.values()))
            if self._ages[oldest] >= cutoff:
                return
            self.writable().delete(oldest.name)
            self._known.pop(0)
            self._ages.pop(oldest, None)
            if self._cached is not None and self._cached[0] == oldest:
                self._cached = None
