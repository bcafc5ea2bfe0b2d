"""The replay that rebuilds a windowed plan's state before a batch Spark no longer keeps it for
(``verify --recompute``), as a savepoint restore rebuilds it (docs/savepoints.md, 'Replay with a floor').

For batches A..B of a recorded run, A > 0, whose state before A Spark no longer keeps (batch A-1
gone from its offset log: it keeps ``spark.sql.streaming.minBatchesToRetain`` batches and as many
state versions), with W the watermark batch A-1 applied (``batchWatermarkMs`` of ``offsets/A-1``,
Spark's file or the sink log's record of it) and W0 = ``open_from(window, W)``:

    scratch batch 0   [rewind, start of A) with the floor (W0, W, start of A): the state after A-1
                      (``offsets/0`` written before the start, uncommitted: Spark runs it on start,
                      its start the rewind recorded on its end; its output is discarded)
    scratch batch k   recorded batch A-1+k, k = 1..B-A+1, planned by the replay source from the
                      renumbered view (``<view>/offsets/k`` = the recorded ``offsets/A-1+k``)

Why batch A then runs as the recorded one did (Spark 4.x, ``WatermarkTracker.updateWatermark``:
the global watermark is the largest ``max event time - delay`` a batch's watermark operator saw,
from 0, never lowered; the stateful operator evicts at the batch's own watermark and drops input
at the previous batch's, ``late_records``):
- eviction: the recorded W_A is the largest event time of batches 0..A-1 minus the delay (or 0).
  That record's time is >= W0 (W0 <= W_{A-1} <= it - delay), so it is not before the rewind batch
  (every earlier row is < W0) and batch 0 reads it: Spark plans batch 1 under W_A. Each scratch
  batch's ``batchWatermarkMs`` is compared with the recorded one before its output is taken
  (``check_watermark``); a difference stops the replay, naming both.
- dropped input: scratch batch 1 drops at 0, the recorded A at W_{A-1}; the floor (``t >= W0``,
  before the aggregation) drops what W_{A-1} dropped: a tumbling window of a row with ``t < W0``
  ends at or before W0 <= W_{A-1}, one of a row with ``t >= W0`` after W_{A-1}. The late branch
  judges with ``max(watermark, W)``; from batch 2 on the watermarks are the recorded ones.
- state: the recorded state after A-1 is the windows ending after W_{A-1}, over every row read with
  ``t >= W0`` (never late: their windows end after every watermark applied); batch 0 reads them all
  and no other (the floor).
- overlapping sliding windows (``seeded``): a row with ``t >= W0`` may also be in windows that
  closed at W, whose (row, window) pairs only a batch judged at W drops. As a savepoint restore
  does (``pipeline.watermark_seed``), scratch batch 0 is then the seed (empty, under W, written
  through Spark's offset log), the replay is batch 1 (its late pairs judged at W, evicted at W:
  nothing emitted), and recorded batch A-2+k is scratch batch k; batch A (scratch 2) is judged at
  W_{A-1} (batch 0 read nothing) and evicts at W_A, as recorded.
The batch table is the savepoint's (``savepoint_plan.batch_table``: starts from Spark's offset log,
else the event-time records); a record without its start takes it from the sink log's recorded
inputs of the batch before (``with_recorded_starts``). Where they do not prove the rewind, the
reason is ``plan_rewind``'s (``EventTimesMissing``, never an empty replay).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig, Records
from kafka_eos.config.records import records_home
from kafka_eos.connectors.operate.recorded_view import recorded_inputs, watermark_of
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, parse_entry
from kafka_eos.connectors.pipeline.savepoint_plan import batch_table, prefix_bound, window_of
from kafka_eos.offsets import model
from kafka_eos.offsets.model import Offsets
from kafka_eos.offsets.rewind import REFUSALS, SavepointRefused, StateNotRebuildable, WindowSpec, plan_rewind
from kafka_eos.txn.log import event_times
from kafka_eos.txn.log.event_times import BatchTimes
from kafka_eos.txn.log.savepoints import RestoreStart, read_restore, write_restore
from kafka_eos.txn.log.sink_log import SinkLogReader

ORIGIN = "verify --recompute"
NO_WINDOW = "the query is built in code: the replay that rebuilds its state needs a YAML pipeline's window"
WAY_ON = ("a range from batch 0, or from a batch whose previous one Spark still keeps, is recomputed; older "
          "batches are verified without --recompute")
_SAVEPOINT_WAY = ". Take the savepoint"  # where plan_rewind's refusal turns to a savepoint's way on


@dataclass(frozen=True)
class StatePlan:
    """What the replay needs of the pipeline: its window and delay, where its records live
    (``records_home``) and the recorded checkpoint's own restore record, if it was restored."""
    window: WindowSpec
    delay_ms: int | None
    home: str
    restored: RestoreStart | None
    cfg: PipelineConfig | None = None   # the pipeline, for the seed of overlapping windows

    @classmethod
    def of(cls, cfg: PipelineConfig) -> "StatePlan":
        home, w = records_home(cfg), cfg.transform.watermark
        return cls(window_of(cfg), w.delay_ms if w else None, home, read_restore(home), cfg)

    def seed(self, spark: Any, scratch: str, floor: RestoreStart) -> None:
        """Write the seed (``watermark_seed``: an empty batch 0 under W) into the scratch checkpoint."""
        from kafka_eos.connectors.pipeline import watermark_seed
        assert self.cfg is not None
        watermark_seed.write(spark, scratch_config(self.cfg, scratch), floor)


@dataclass(frozen=True)
class DeepReplay:
    first: int            # A, the first recorded batch compared
    floor: RestoreStart   # what the replay batch reads, and the floor every batch applies
    seeded: bool = False  # overlapping windows: scratch batch 0 is the seed, the replay batch 1

    @property
    def replay_batch(self) -> int:
        """The scratch batch that rebuilds the state (its output is not compared)."""
        return int(self.seeded)

    def recorded(self, scratch_batch: int) -> int:
        return scratch_batch + self.first - 1 - self.replay_batch

    def scratch(self, recorded_batch: int) -> int:
        return recorded_batch - self.first + 1 + self.replay_batch


def _end(text: str, batch: int) -> Offsets:
    entry = parse_entry(batch, text)
    if entry is None or not entry.sources:
        raise SavepointRefused(f"batch {batch}'s offset-log entry is unreadable: the replay's end is not known")
    return model.decode(json.loads(entry.sources[0]))  # every scan of a batch reads the same offsets


def merged(mine: RestoreStart, recorded: RestoreStart | None) -> RestoreStart:
    """``mine`` with the recorded run's own floor (a checkpoint started from a savepoint): the larger
    W0 and W, each partition's larger replayed end."""
    if recorded is None or recorded.w0_ms is None or mine.w0_ms is None:
        return mine
    end = {tp: max(o, recorded.end.get(tp, o)) for tp, o in mine.end.items()}
    return replace(mine, w0_ms=max(mine.w0_ms, recorded.w0_ms), watermark_ms=max(mine.watermark_ms,
                                                                                 recorded.watermark_ms), end=end)


def plan_floor(checkpoint: str, sink_log: str, state: StatePlan | None, first: int, before: str) -> DeepReplay:
    """The replay before batch ``first`` (``before``: batch first-1's offset-log text); raises
    ``SavepointRefused`` with the reason it cannot be planned."""
    if state is None:
        raise SavepointRefused(NO_WINDOW)
    if state.window.kind not in ("tumbling", "sliding"):
        raise StateNotRebuildable(f"its state ({state.window.kind}) cannot be rebuilt by a replay: "
                                  f"{REFUSALS[state.window.kind]}")
    w, end = watermark_of(before), _end(before, first - 1)
    reader = CheckpointReader(checkpoint)
    times = with_recorded_starts(event_times.read_times(sink_log), sink_log, first - 1)
    rows = batch_table(reader, times, first - 1)
    bound = prefix_bound(reader, rows, state.delay_ms, times, state.home)
    rewind = plan_rewind(state.window, w, {r.batch: r.max_ms for r in rows if r.recorded},
                         {r.batch: dict(r.start) for r in rows}, end, bound)
    assert rewind.floor is not None
    floor = RestoreStart(ORIGIN, rewind.floor.w0_ms, w, end, dict(rewind.offsets), rewind.rewind_batch)
    return DeepReplay(first, merged(floor, state.restored), state.window.overlapping)


def with_recorded_starts(times: Mapping[int, BatchTimes], sink_log: str, last: int) -> dict[int, BatchTimes]:
    """``times`` where a record without its start (written by a run on pyspark 4.0/4.1 before their
    progress's offsets were read) takes it from the sink log: batch b's start is the end of batch
    b-1's recorded offset-log text (``BatchRecord.inputs``), batch 0's the start planned on its own
    end. From ``last`` back, as far as the batch table reaches (it stops at the first batch whose
    start is known nowhere)."""
    out, log = dict(times), SinkLogReader(sink_log)
    for batch in range(last, -1, -1):
        kept = out.get(batch)
        if kept is None:
            break
        if kept.start is None:
            start = _recorded_start(log, batch)
            if start is None:
                break
            out[batch] = replace(kept, start=model.encode(start)["topics"])
    return out


def _recorded_start(log: SinkLogReader, batch: int) -> Offsets | None:
    text = recorded_inputs(log, max(batch - 1, 0))
    entry = parse_entry(max(batch - 1, 0), text)
    if entry is None or not entry.sources:
        return None
    try:
        stored = json.loads(entry.sources[0])
        return model.planned_start(stored) if batch == 0 else model.decode(stored)
    except (ValueError, TypeError, AttributeError, KafkaEosError):
        return None


def reason(refused: SavepointRefused) -> str:
    """Why the state before a batch cannot be rebuilt, and verify's way on (not a savepoint's)."""
    text = str(refused.args[0] if refused.args else refused).split(_SAVEPOINT_WAY, 1)[0].rstrip(".")
    return f"{text}; {WAY_ON}"


def replay_entry(before: str, floor: RestoreStart, first_batch: bool = True) -> str:
    """The replay batch's entry: batch first-1's, each scan from the rewind to its end, under
    watermark 0; as scratch ``offsets/0`` (``first_batch``) its start is recorded on its end, as a
    first batch's; after the seed it starts where the seed ended (the rewind)."""
    entry = parse_entry(0, before)
    assert entry is not None
    metadata = {**json.loads(entry.metadata or "{}"), "batchWatermarkMs": 0}
    lines = []
    for line in entry.sources:
        stored = json.loads(line)
        end = model.decode(stored)
        tasks = model.planned_tasks(stored) if end != floor.rewind else None
        start = floor.rewind if first_batch else None
        lines.append(model.with_scan(model.encode(end, start=start, tasks=tasks), model.scan_of(stored)))
    return "\n".join(["v1", _compact(metadata), *(_compact(line) for line in lines)])


def _compact(data: object) -> str:
    return json.dumps(data, separators=(",", ":"))


def write(deep: DeepReplay, texts: Mapping[int, str], metadata: str, view: str, scratch: str) -> None:
    """The renumbered view (``<view>/offsets/k``: the replay batch, then the recorded batches) and
    the scratch checkpoint Spark starts from: the recorded ``metadata``, the floor's restore record
    and, unseeded, ``offsets/0`` (the replay batch, uncommitted); seeded, the caller writes the
    seed (``StatePlan.seed``, through Spark) and Spark plans the replay batch from the view."""
    replay = replay_entry(texts[deep.first - 1], deep.floor, first_batch=not deep.seeded)
    for root in (Path(view), Path(scratch)):
        (root / "offsets").mkdir(parents=True, exist_ok=True)
        (root / "metadata").write_text(metadata)
    (Path(view) / "offsets" / str(deep.replay_batch)).write_text(replay)
    if not deep.seeded:
        (Path(scratch) / "offsets" / "0").write_text(replay)
    for batch, text in texts.items():
        if batch >= deep.first:
            (Path(view) / "offsets" / str(deep.scratch(batch))).write_text(text)
    write_restore(scratch, deep.floor)


def scratch_config(cfg: PipelineConfig, scratch: str) -> PipelineConfig:
    """``cfg`` on the scratch checkpoint, its records beside it: the late branch reads the
    watermarks Spark applies there, the floor is the scratch's restore record."""
    return replace(cfg, checkpoint=replace(cfg.checkpoint, location=scratch, records=Records.CHECKPOINT))


def check_watermark(scratch: str, view: str, batch: int) -> str:
    """'' when scratch batch ``batch`` runs under the recorded watermark, else the difference."""
    ran, recorded = CheckpointReader(scratch).offsets(batch), CheckpointReader(view).offsets(batch)
    mine = json.loads(ran.metadata or "{}").get("batchWatermarkMs", 0) if ran else None
    theirs = json.loads(recorded.metadata or "{}").get("batchWatermarkMs", 0) if recorded else None
    return "" if mine == theirs else (f"the replay planned the batch under watermark {mine} ms, the recorded "
                                      f"run under {theirs} ms")
