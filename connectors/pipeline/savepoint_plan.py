"""What a savepoint of a pipeline holds, read from its file, checkpoint and sink log; and the rewind
a (changed) pipeline restored from it gets (``offsets.rewind``; design: docs/savepoints.md).

Invariants:
- ``window_of`` says what state the transform keeps, from the file alone: stateless, no watermark,
  a stream-stream join (a JOIN in a stateful transform), a tumbling or sliding window (the literal
  durations of ``window(...)`` over the watermark column: ``config.late_records``), a session
  window, or deduplication (state keyed by the event time without a window). Anything but
  stateless, tumbling and sliding windows is refused (``StateNotRebuildable``); overlapping sliding
  windows are carried with a first watermark (``RewindPlan.needs_watermark_seed``, written by the
  restore: ``watermark_seed``).
- ``gather`` reads only: the last committed batch N (refused when a later batch is planned and
  not committed, or none committed), its end offsets and applied watermark W (``offsets/N``), and
  for each batch whose start is known (the offset log's, which Spark prunes to its last
  ``minBatchesToRetain``, else the start its event-time record keeps), its start and event times.
- ``restore_plan`` plans with the NEW pipeline's window against the savepoint's W and table.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, replace
from typing import Any, Mapping

from kafka_eos.config.durations import parse_duration_ms
from kafka_eos.config.late_records import LateSpecError, late_spec
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import records_home
from kafka_eos.config.rules import stateful
from kafka_eos.config.state_backend import PROVIDER_CONF
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, OffsetEntry
from kafka_eos.connectors.pipeline.pipeline_shape import shape_of
from kafka_eos.connectors.pipeline.progress import sink_log_location
from kafka_eos.offsets import model
from kafka_eos.offsets.model import Offsets
from kafka_eos.offsets.rewind import (NOTHING_BEFORE, RewindPlan, SavepointRefused, StateNotRebuildable, WindowSpec,
                                      plan_rewind)
from kafka_eos.txn.log import event_times
from kafka_eos.txn.log.event_times import BatchTimes
from kafka_eos.txn.log.savepoints import BatchRow, Savepoint, read_restore
from kafka_eos.txn.log.sink_log import SinkLogReader

SHUFFLE_CONF = "spark.sql.shuffle.partitions"
_JOIN = re.compile(r"(?is)\bjoin\b")


def window_of(cfg: PipelineConfig) -> WindowSpec:
    """The state ``cfg``'s transform keeps (see module); raises nothing."""
    t = cfg.transform
    if not stateful(t):
        return WindowSpec("stateless")
    if t.watermark is None:
        return WindowSpec("no_watermark")
    if _JOIN.search(t.sql or ""):
        return WindowSpec("stream_join")
    try:
        spec = late_spec(t.sql, t.watermark.column)
    except LateSpecError:
        return WindowSpec("arbitrary_state")
    if spec.kind == "session":
        return WindowSpec("session")
    if spec.kind == "event_time":
        return WindowSpec("dedup")
    size, slide = parse_duration_ms(spec.size), parse_duration_ms(spec.slide)
    offset = parse_duration_ms(spec.start or "0")
    return WindowSpec.tumbling(size, offset) if size == slide else WindowSpec.sliding(size, slide, offset)


def check_restorable(window: WindowSpec) -> None:
    """Refuse a window a savepoint cannot carry exactly in this build (see module)."""
    if window.kind not in ("stateless", "tumbling", "sliding"):
        raise StateNotRebuildable.of_kind(window.kind)


def _end(entry: OffsetEntry | None, batch: int, checkpoint: str) -> Offsets:
    if entry is None or not entry.sources:
        raise SavepointRefused(f"{checkpoint}/offsets/{batch}: missing or unreadable; the savepoint needs batch "
                               f"{batch}'s offsets (restore the checkpoint)")
    return model.decode(json.loads(entry.sources[0]))  # every scan of a batch reads the same offsets


def _start(reader: CheckpointReader, batch: int) -> Offsets | None:
    """Where ``batch`` started: batch b-1's end, or batch 0's planned start (None: not kept)."""
    if batch == 0:
        entry = reader.offsets(0)
        return None if entry is None or not entry.sources else model.planned_start(json.loads(entry.sources[0]))
    entry = reader.offsets(batch - 1)
    return None if entry is None or not entry.sources else model.decode(json.loads(entry.sources[0]))


def _watermark(entry: OffsetEntry) -> int:
    return int(json.loads(entry.metadata or "{}").get("batchWatermarkMs", 0))


def last_committed(reader: CheckpointReader) -> int:
    """The last committed batch N; refused when none is, or a later one is planned and uncommitted."""
    planned, committed = reader.offset_batches(), reader.commit_batches()
    if not committed:
        raise SavepointRefused(f"{reader.location}: no batch committed: there is nothing to save (a new "
                               "checkpoint starts the pipeline as well)")
    if planned and planned[-1] > committed[-1]:
        raise SavepointRefused(f"{reader.location}: batch {planned[-1]} is planned and not committed: run the "
                               "pipeline until it commits (`kafka-eos resume`, then `kafka-eos run --once`), then "
                               "take the savepoint")
    return committed[-1]


def batch_table(reader: CheckpointReader, times: Mapping[int, BatchTimes], last: int) -> tuple[BatchRow, ...]:
    """Every batch up to ``last`` whose start is known (the offset log's, else its event-time
    record's), the newest run of contiguous ones."""
    rows: list[BatchRow] = []
    for batch in range(last, -1, -1):
        start = _start(reader, batch)
        if start is None and batch in times:
            start = event_times.start_of(times[batch])
        if start is None:
            break
        t = times.get(batch)
        rows.append(BatchRow(batch, start, t.max_ms if t else None, t.min_ms if t else None, t is not None,
                             t.coverage if t else None))
    return tuple(reversed(rows))


def prefix_bound(reader: CheckpointReader, rows: tuple[BatchRow, ...], delay_ms: int | None,
                 times: Mapping[int, BatchTimes], home: str | None = None) -> int | None:
    """No row read before the table's first batch has a later event time than this (``plan_rewind``):
    that batch's watermark (the offset log's, else its record's) plus the delay. ``home``: where the
    checkpoint's restore record is (``config.records.records_home``; default the checkpoint)."""
    if not rows or delay_ms is None:
        return None
    first = rows[0].batch
    if first == 0:
        restored = read_restore(home or reader.location)
        if restored is None:
            return NOTHING_BEFORE
        return None if restored.w0_ms is None else restored.w0_ms - 1
    entry = reader.offsets(first)
    watermark = _watermark(entry) if entry is not None else times[first].watermark_ms if first in times else None
    return None if watermark is None else watermark + delay_ms


def gather(cfg: PipelineConfig, pyspark_version: str) -> Savepoint:
    """The savepoint of ``cfg``'s stopped checkpoint (reads only; see module)."""
    checkpoint = str(cfg.checkpoint.location)
    reader, log = CheckpointReader(checkpoint), sink_log_location(cfg)
    last = last_committed(reader)
    entry = reader.offsets(last)
    end = _end(entry, last, checkpoint)
    assert entry is not None
    window = window_of(cfg)
    check_restorable(window)
    delay = cfg.transform.watermark.delay_ms if cfg.transform.watermark else None
    times = event_times.read_times(log)
    rows = batch_table(reader, times, last)
    sink_last = SinkLogReader(log).latest_batch_id()
    conf = entry.conf()
    sp = Savepoint(cfg.name or "kafka-eos", checkpoint, log, cfg.sink.transactional_id_prefix or "", last, end,
                   _watermark(entry), delay, asdict(window), asdict(shape_of(cfg)),
                   {"provider": conf.get(PROVIDER_CONF), "shuffle_partitions": conf.get(SHUFFLE_CONF)}, rows,
                   prefix_bound(reader, rows, delay, times, records_home(cfg)), pyspark_version, int(time.time() * 1000),
                   sink_last_batch=sink_last)
    return _with_rewind(sp, window)


def _with_rewind(sp: Savepoint, window: WindowSpec) -> Savepoint:
    """``sp`` with the rewind of its own window (when it has state; else as it is)."""
    if window.kind == "stateless":
        return sp
    plan = restore_plan(sp, window)
    rewind: dict[str, Any] = {"batch": plan.rewind_batch, "w0_ms": plan.floor.w0_ms if plan.floor else None,
                              "offsets": {f"{t}-{p}": o for (t, p), o in sorted(plan.offsets.items())}}
    return replace(sp, rewind=rewind)


def restore_plan(sp: Savepoint, window: WindowSpec) -> RewindPlan:
    """The rewind of a pipeline with ``window`` restored from ``sp`` (refusals: ``check_restorable``)."""
    check_restorable(window)
    return plan_rewind(window, sp.watermark_ms, sp.max_times(), sp.starts(), sp.end, sp.prefix_bound_ms)
