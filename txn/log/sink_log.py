"""The sink log: the durable record of each batch's commit decision, beside the checkpoint.

Records are create-only (``LogStore.create``): every new state of batch N is a new file
``<N>.<seq>.json`` with ``seq`` one above the record its writer last read or wrote; a create
that finds the name taken means another run wrote a state of that batch meanwhile, and raises
``SinkLogConflictError`` instead of proceeding. The newest ``seq`` of a batch is its state
(a ``BatchState``, persisted by its value; ``txn.states`` holds the allowed transitions, checked
by ``BatchRecord.with_status`` and ``SinkLog.append``):
    decided    -> every handle of the batch is recorded; from now on the batch WILL be
                  committed (by this run or by recovery), never re-written blindly;
    committed  -> every handle's EndTxn succeeded.
Per sink partition (a ``PartitionState``) the record says ``pending``, ``committed`` or ``lost`` (the broker aborted
the transaction before we could commit it; that partition's data must be written again).
A record may carry ``inputs``: the engine's own description of the batch's input (for Spark, the
text of ``<checkpoint>/offsets/<N>``), opaque here, kept for a later re-run of the batch.
``_meta.json`` (create-only too) pins the format version, the transactional-id prefix and the
query id of the checkpoint the log belongs to (Spark's ``<checkpoint>/metadata``).

Layout and retention (``SinkLog.prune``, after every commit; ``txn.sink_log_segments``):
    <log>/_meta.json
    <log>/<N>.<seq>.json                          loose records: always the newest ``KEEP_BATCHES``
                                                  batches (recovery and status read only these)
    <log>/_segments/<first:012d>-<last:012d>.json.gz   older committed batches, ``SEGMENT_BATCHES``
                                                  to a create-only segment (each batch's final record)
A committed batch is kept (loose, then in a segment) for the evidence retention
(``SinkConfig.evidence_retention_ms``, default 7 days, by its ``committed_at_ms``), then deleted.
``SinkLogReader`` reads both: ``batch_ids`` is the loose batches and the segments' ranges (from
their names), ``get`` falls back to the segment holding a batch (the last decoded one is kept).
It lists the loose files before the segments, and a segment is created before its loose files
are deleted, so a batch being rolled is never missed.
``SinkLogReader`` reads a log through a ``LogReader`` and creates nothing (executors, progress
lines, validation); only ``SinkLog`` (the driver's writer) creates the location, ``_meta.json``
and segments. ``SinkLog`` keeps the committed records it wrote (and those it read to roll them)
in memory until they are rolled, so a roll reads files only for batches another run wrote.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from typing import Mapping

from kafka_eos.option_map import OptionMap
from kafka_eos.txn.protocol.errors import SinkLogConflictError, SinkLogError
from kafka_eos.txn.log.log_store import LogReader, LogStore, child
from kafka_eos.txn.log.stores import open_reader, open_store
from kafka_eos.txn.log.batch_record import (COMMITTED, DECIDED, LOG_FORMAT, LOST, PENDING,  # noqa: F401 - the
                                            BatchRecord, check_transition)  # log's readers import them from here
from kafka_eos.txn.log.sink_log_segments import DEFAULT_EVIDENCE_RETENTION_MS, SegmentReader, SegmentRoller

LOG_DIR = "kafka-eos-sink"
META = "_meta.json"
KEEP_BATCHES = 100
_RECORD = re.compile(r"^(\d+)\.(\d+)\.json$")


def location_for(checkpoint: str) -> str:
    """Where the sink log of the query checkpointed at ``checkpoint`` lives (its default place)."""
    return child(checkpoint, LOG_DIR)


def location_from_options(options: Mapping[str, str]) -> str | None:
    """The sink's option ``sinkLogLocation``, else ``location_for(checkpointLocation)`` (keys in any
    case); None when neither is set."""
    options = OptionMap.of(options)
    if options.get("sinkLogLocation"):
        return str(options["sinkLogLocation"])
    checkpoint = options.get("checkpointLocation")
    return location_for(str(checkpoint)) if checkpoint else None


def record_name(batch_id: int, seq: int) -> str:
    return f"{batch_id}.{seq}.json"


class SinkLogReader:
    """Reads a sink log; creates nothing (a missing location reads as an empty log)."""

    def __init__(self, location: str) -> None:
        self.store: LogReader = open_reader(location)
        self.segments: SegmentReader = SegmentReader(location)

    def meta(self) -> dict | None:
        text = self.store.read(META)
        return json.loads(text) if text else None

    def _records(self) -> dict[int, int]:
        """batch id -> newest seq."""
        newest: dict[int, int] = {}
        for name in self.store.names():
            match = _RECORD.match(name)
            if match:
                batch, seq = int(match[1]), int(match[2])
                newest[batch] = max(seq, newest.get(batch, -1))
        return newest

    def batch_ids(self) -> list[int]:
        """Every batch in the log: loose ones, then the segments' ranges (listed after the loose
        files: a batch rolled meanwhile is in one or the other)."""
        ids = set(self._records())
        for segment in self.segments.segments():
            ids.update(range(segment.first, segment.last + 1))
        return sorted(ids)

    def latest_batch_id(self) -> int | None:
        """The newest batch: a loose one (segments are listed only for a log with none)."""
        loose = self._records()
        if loose:
            return max(loose)
        segments = self.segments.segments()
        return segments[-1].last if segments else None

    def get(self, batch_id: int) -> BatchRecord | None:
        """The newest state of a batch (loose, else from the segment holding it), or None. Segments
        hold only batches older than every loose one: a newer id costs no segment listing; a batch
        of the last decoded segment costs no I/O (a scan of old batches lists nothing per batch)."""
        data = self.segments.cached(batch_id)
        if data is not None:
            return BatchRecord.from_dict(data, f"{self.segments.location} batch {batch_id}")
        loose = self._records()
        seq = loose.get(batch_id)
        record = None if seq is None else self._read(batch_id, seq)
        if record is not None:
            return record
        if seq is None and loose and batch_id > min(loose):
            return None
        data = self.segments.find(batch_id)  # rolled (maybe since the listing above)
        return None if data is None else BatchRecord.from_dict(data, f"{self.segments.location} batch {batch_id}")

    def _read(self, batch_id: int, seq: int) -> BatchRecord | None:
        name = record_name(batch_id, seq)
        text = self.store.read(name)
        return BatchRecord.from_json(text, f"{self.store.location}/{name}") if text else None

    def latest(self) -> BatchRecord | None:
        batch_id = self.latest_batch_id()
        return None if batch_id is None else self.get(batch_id)


def check_binding(meta: dict | None, where: str, prefix: str, query_id: str | None) -> None:
    """Refuse a sink log whose ``_meta.json`` (``meta``; None: not started, nothing to check) pins
    another format, prefix or query. Creates nothing."""
    if meta is None:
        return
    if meta.get("v") != LOG_FORMAT:
        raise SinkLogError(
            f"{where}: sink log format {meta.get('v')!r} is not {LOG_FORMAT} (this build writes create-only "
            "records bound to the checkpoint's query id). Let the old build finish its last batch, then "
            "start this build with a new checkpointLocation (or sink option sinkLogLocation) and a new "
            "transactional.id.prefix.")
    if meta.get("prefix") != prefix:
        raise SinkLogError(
            f"{where} belongs to transactional.id.prefix {meta.get('prefix')!r}, not "
            f"{prefix!r}: changing the prefix of a running pipeline would orphan its decided "
            "transactions. Keep the old prefix, or start from a new checkpoint location.")
    pinned = meta.get("query_id")
    if pinned and query_id and pinned != query_id:
        raise SinkLogError(
            f"{where} belongs to the query {pinned} (the id in its checkpoint's 'metadata' file), not to "
            f"{query_id}: a sink log reused by another checkpoint would mistake that query's batch ids "
            "for its own. Point sink option sinkLogLocation at a new directory (or drop it to use "
            "<checkpointLocation>/kafka-eos-sink), or restart from the checkpoint that wrote this log.")


class SinkLog(SinkLogReader):
    """Batch records of one sink, written by the driver of the one live query of its checkpoint."""

    def __init__(self, location: str, prefix: str, query_id: str | None = None,
                 retention_ms: int = DEFAULT_EVIDENCE_RETENTION_MS) -> None:
        self.store: LogStore = open_store(location)
        self.segments: SegmentRoller = SegmentRoller(location, retention_ms)
        self._final: dict[int, dict] = {}  # committed records (to_dict) not yet rolled, written or read here
        self._check_meta(prefix, query_id)

    def _check_meta(self, prefix: str, query_id: str | None) -> None:
        meta = self.meta()
        if meta is None:
            try:
                self.store.create(META, json.dumps({"v": LOG_FORMAT, "prefix": prefix, "query_id": query_id}))
            except FileExistsError:
                pass  # another driver created it at the same moment: check what it pinned
            meta = self.meta()
        check_binding(meta, self.store.location, prefix, query_id)

    def append(self, record: BatchRecord, base: BatchRecord | None) -> BatchRecord:
        """Create the next state of a batch after ``base`` (the state this writer read or wrote
        last; None: the batch has none). Raises SinkLogConflictError when another run wrote it, and
        StateTransitionError (writing nothing) when ``record`` may not follow ``base``."""
        check_transition(base, record)
        record = replace(record, seq=0 if base is None else base.seq + 1)
        name, data = record_name(record.batch_id, record.seq), record.to_dict()
        try:
            self.store.create(name, json.dumps(data, indent=1))
        except FileExistsError:
            raise SinkLogConflictError.of_record(f"{self.store.location}/{name}", record.batch_id) from None
        if record.state == COMMITTED:
            self._final[record.batch_id] = data  # what a roll writes, without reading the file back
        return record

    def prune(self, keep: int = KEEP_BATCHES, now_ms: float | None = None) -> None:
        """Keep the newest ``keep`` batches loose; roll older committed ones into segments, and
        delete what is older than the evidence retention (``sink_log_segments``)."""
        loose = self._records()

        def final(batch_id: int) -> dict | None:
            if batch_id not in self._final:
                name = record_name(batch_id, loose[batch_id])
                text = self.store.read(name)
                data = None if text is None else BatchRecord.from_json(text, name).to_dict()
                if data is None or data["state"] != COMMITTED:
                    return data
                self._final[batch_id] = data
            return self._final[batch_id]

        def drop(batch_id: int) -> None:
            for seq in range(loose[batch_id] + 1):
                self.store.delete(record_name(batch_id, seq))
            self._final.pop(batch_id, None)

        now_ms = time.time() * 1000 if now_ms is None else now_ms
        for batch_id in self.segments.prune(sorted(loose), final, drop, keep, now_ms):
            self._final.pop(batch_id, None)
