"""verify --recompute before the state Spark keeps: the replay's floor and rewind, planned from a
checkpoint's offset log, the sink log's event-time records and offset-log texts (real files in
tmp_path), and the scratch checkpoint and renumbered view written for Spark."""
from __future__ import annotations

import json

import pytest

from kafka_eos.connectors.operate.recompute_rewind import (NO_WINDOW, WAY_ON, DeepReplay, StatePlan,
                                                           check_watermark, merged, plan_floor, reason,
                                                           replay_entry, write)
from kafka_eos.offsets import model
from kafka_eos.offsets.rewind import EventTimesMissing, SavepointRefused, StateNotRebuildable, WindowSpec
from kafka_eos.txn.log import event_times
from kafka_eos.txn.log.event_times import BatchTimes
from kafka_eos.txn.log.savepoints import RestoreStart, read_restore

MINUTE = 60_000
DELAY = 30_000


def line(end: int, scan: str | None = None, start: int | None = None, tasks: int | None = 2) -> str:
    stored = model.encode({("in", 0): end}, start=None if start is None else {("in", 0): start}, tasks=tasks)
    return json.dumps(model.with_scan(stored, scan))


def entry(batch: int, watermark: int, scans: tuple[str | None, ...] = (None,)) -> str:
    """Batch ``batch`` of a run reading 100 records a batch, one minute of event time per batch."""
    metadata = json.dumps({"batchWatermarkMs": watermark, "batchTimestampMs": 7, "conf": {"a": "b"}})
    return "\n".join(["v1", metadata, *(line(100 * (batch + 1), s) for s in scans)])


def watermark(batch: int) -> int:
    """Batch b's watermark: the largest event time of batches < b (b minutes) minus the delay."""
    return max(0, batch * MINUTE - 1 - DELAY) if batch else 0


@pytest.fixture
def recorded(tmp_path):
    """Batches 0-9, batch b reading offsets [100b, 100b+100) with event times [b min, b+1 min);
    Spark holds batches 8-9; the sink log has every batch's event-time record."""
    root, log = tmp_path / "checkpoint", str(tmp_path / "checkpoint" / "kafka-eos-sink")
    (root / "offsets").mkdir(parents=True)
    for b in (8, 9):
        (root / "offsets" / str(b)).write_text(entry(b, watermark(b)))
    for b in range(10):
        event_times.record_batch(log, BatchTimes(b, b * MINUTE, (b + 1) * MINUTE - 1, watermark(b),
                                                 start={"in": {"0": 100 * b}}))
    return root, log


def state(window: WindowSpec, restored: RestoreStart | None = None, home: str = "/nowhere") -> StatePlan:
    return StatePlan(window, DELAY, home, restored)


def test_the_floor_is_w0_of_the_watermark_batch_a_minus_1_applied_and_the_rewind_its_first_batch(recorded):
    root, log = recorded
    deep = plan_floor(str(root), log, state(WindowSpec.tumbling(MINUTE)), 6, entry(5, watermark(5)))
    # W_5 = 5 min - 1 ms - 30 s: the window open at it starts at minute 4; batch 4 holds minute 4
    assert (deep.floor.watermark_ms, deep.floor.w0_ms, deep.floor.rewind_batch) == (watermark(5), 4 * MINUTE, 4)
    assert deep.floor.rewind == {("in", 0): 400} and deep.floor.end == {("in", 0): 600}
    assert (deep.recorded(1), deep.scratch(9), deep.recorded(0)) == (6, 4, 5)
    wider = plan_floor(str(root), log, state(WindowSpec.tumbling(3 * MINUTE)), 6, entry(5, watermark(5)))
    assert (wider.floor.w0_ms, wider.floor.rewind_batch) == (3 * MINUTE, 3)


def test_event_time_records_that_do_not_reach_back_say_so(recorded, tmp_path):
    root, _ = recorded
    log = str(tmp_path / "other-log")
    for b in (5, 6):  # only batches 5-6 recorded: what batch 4 read is bounded by W_5 + delay >= W0
        event_times.record_batch(log, BatchTimes(b, b * MINUTE, (b + 1) * MINUTE - 1, watermark(b),
                                                 start={"in": {"0": 100 * b}}))
    with pytest.raises(EventTimesMissing, match="may hold event times at or after 240000 ms") as refused:
        plan_floor(str(root), log, state(WindowSpec.tumbling(MINUTE)), 6, entry(5, watermark(5)))
    said = reason(refused.value)
    assert said.startswith("the batches before batch 5 may hold event times at or after 240000 ms")
    assert said.endswith(WAY_ON) and "Take the savepoint" not in said and "checkpoint.location" not in said, said


def test_records_without_start_offsets_refuse_the_replay_never_an_empty_one(recorded, tmp_path):
    """Records as pyspark 4.0/4.1 runs kept them before their progress's offsets were read (no
    ``start``): no batch before Spark's offset log has a known start. Before: the rewind was None, the
    replay read nothing and the batches were reported "not recomputed" only by the empty re-run."""
    root, _ = recorded
    log = str(tmp_path / "startless-log")
    for b in range(10):
        event_times.record_batch(log, BatchTimes(b, b * MINUTE, (b + 1) * MINUTE - 1, watermark(b)))
    with pytest.raises(EventTimesMissing, match="no batch's start offsets are known") as refused:
        plan_floor(str(root), log, state(WindowSpec.tumbling(MINUTE)), 6, entry(5, watermark(5)))
    said = reason(refused.value)
    assert said.startswith("no batch's start offsets are known") and "from 240000 ms on" in said, said
    assert said.endswith(WAY_ON) and "Take the savepoint" not in said, said


def test_records_without_start_offsets_take_them_from_the_sink_log_s_recorded_inputs(recorded, tmp_path):
    """A run recorded on pyspark 4.0/4.1 before its progress's offsets were read: the records keep no
    start, the sink log keeps each batch's offset-log text (``inputs``); batch b's start is batch
    b-1's end there (batch 0's, the start planned on its end). Before: refused (no start known)."""
    import time
    from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog
    from tests.txn.fakes import append_path, handle
    root, with_starts = recorded
    log = str(tmp_path / "startless-log")
    sink = SinkLog(log, "p")
    for b in range(10):
        event_times.record_batch(log, BatchTimes(b, b * MINUTE, (b + 1) * MINUTE - 1, watermark(b)))
        text = "\n".join(["v1", json.dumps({"batchWatermarkMs": watermark(b)}), line(100 * (b + 1), start=0 if b == 0
                                                                                     else None)])
        append_path(sink, BatchRecord(b, DECIDED, 1, (handle(0),), {0: "pending"}, inputs=text),
                    BatchRecord(b, COMMITTED, 1, (handle(0),), {0: "committed"}, {"committed_at_ms": time.time() * 1000},
                                inputs=text))
    for first, window in [(6, WindowSpec.tumbling(MINUTE)), (6, WindowSpec.tumbling(5 * MINUTE)),
                          (6, WindowSpec.sliding(2 * MINUTE, MINUTE))]:
        deep = plan_floor(str(root), log, state(window), first, entry(first - 1, watermark(first - 1)))
        assert deep == plan_floor(str(root), with_starts, state(window), first, entry(first - 1, watermark(first - 1)))
    assert plan_floor(str(root), log, state(WindowSpec.tumbling(5 * MINUTE)), 6, entry(5, watermark(5))
                      ).floor.rewind == {("in", 0): 0}  # W0 = 0: from batch 0's planned start


def test_overlapping_windows_are_seeded_and_the_others_a_replay_cannot_rebuild_refused(recorded):
    root, log = recorded
    sliding = plan_floor(str(root), log, state(WindowSpec.sliding(2 * MINUTE, MINUTE)), 6, entry(5, watermark(5)))
    # W_5 = 4:29.999: the earliest window open at it is [3 min, 5 min); the seed, then the replay
    assert (sliding.seeded, sliding.floor.w0_ms, sliding.floor.rewind_batch) == (True, 3 * MINUTE, 3)
    assert (sliding.replay_batch, sliding.recorded(2), sliding.scratch(9)) == (1, 6, 5)
    with pytest.raises(StateNotRebuildable, match="session") as refused:
        plan_floor(str(root), log, state(WindowSpec("session")), 6, entry(5, watermark(5)))
    said = reason(refused.value)
    assert "a savepoint cannot carry" not in said and said.startswith("its state (session) cannot be rebuilt by a "
                                                                      "replay: an open session reaches back"), said
    assert "runbook" not in said and said.endswith(WAY_ON)
    with pytest.raises(SavepointRefused, match=NO_WINDOW):
        plan_floor(str(root), log, None, 6, entry(5, watermark(5)))
    # a slide equal to its size, or longer, overlaps nothing: replayed as tumbling windows are, unseeded
    assert not plan_floor(str(root), log, state(WindowSpec.sliding(MINUTE, 2 * MINUTE)), 6,
                          entry(5, watermark(5))).seeded


def test_the_recorded_runs_own_floor_is_kept_where_it_is_the_larger():
    mine = RestoreStart("verify --recompute", 100, 150, {("in", 0): 50, ("in", 1): 9}, {("in", 0): 10}, 2)
    theirs = RestoreStart("sp", 120, 110, {("in", 0): 40, ("in", 1): 30}, {("in", 0): 0}, 0)
    both = merged(mine, theirs)
    assert (both.w0_ms, both.watermark_ms, both.end) == (120, 150, {("in", 0): 50, ("in", 1): 30})
    assert both.rewind == mine.rewind and merged(mine, None) == mine
    assert merged(mine, RestoreStart("sp", None, 0, {}, {}, None)) == mine  # a stateless restore: no floor


def test_the_replay_batch_reads_each_scan_from_the_rewind_under_watermark_0():
    floor = RestoreStart("verify --recompute", 4 * MINUTE, 9, {("in", 0): 600}, {("in", 0): 400}, 4)
    text = replay_entry(entry(5, watermark(5), scans=("output", "late")), floor)
    lines = text.split("\n")
    assert lines[0] == "v1" and json.loads(lines[1]) == {"batchWatermarkMs": 0, "batchTimestampMs": 7,
                                                         "conf": {"a": "b"}}
    stored = [json.loads(x) for x in lines[2:]]
    assert [model.scan_of(s) for s in stored] == ["output", "late"]
    assert all(model.planned_start(s) == {("in", 0): 400} and model.decode(s) == {("in", 0): 600} and
               model.planned_tasks(s) == 2 for s in stored)
    empty = replay_entry(entry(5, 0), RestoreStart("v", 0, 0, {("in", 0): 600}, {("in", 0): 600}, None))
    assert model.planned_tasks(json.loads(empty.split("\n")[2])) is None  # no data: no task count


def test_the_view_is_renumbered_and_the_scratch_starts_with_the_replay_batch_uncommitted(tmp_path):
    deep = DeepReplay(6, RestoreStart("verify --recompute", 4 * MINUTE, watermark(5), {("in", 0): 600},
                                      {("in", 0): 400}, 4))
    texts = {b: entry(b, watermark(b)) for b in range(5, 10)}
    view, scratch = tmp_path / "view", tmp_path / "scratch"
    view.mkdir()
    scratch.mkdir()
    write(deep, texts, '{"id":"q"}', str(view), str(scratch))
    assert sorted(int(p.name) for p in (view / "offsets").iterdir()) == [0, 1, 2, 3, 4]
    assert (view / "offsets" / "1").read_text() == texts[6] and (view / "offsets" / "4").read_text() == texts[9]
    assert [p.name for p in (scratch / "offsets").iterdir()] == ["0"] and not (scratch / "commits").exists()
    assert (scratch / "offsets" / "0").read_text() == (view / "offsets" / "0").read_text()
    assert (scratch / "metadata").read_text() == '{"id":"q"}' and read_restore(str(scratch)) == deep.floor

    # Spark plans scratch batch 1 under the watermark batch 0 left: checked against recorded batch 6's
    (scratch / "offsets" / "1").write_text(entry(6, watermark(6)))
    assert check_watermark(str(scratch), str(view), 1) == ""
    (scratch / "offsets" / "1").write_text(entry(6, watermark(6) - 1))
    assert check_watermark(str(scratch), str(view), 1) == (f"the replay planned the batch under watermark "
                                                           f"{watermark(6) - 1} ms, the recorded run under "
                                                           f"{watermark(6)} ms")


def test_a_seeded_replay_leaves_batch_0_to_the_seed_and_plans_the_replay_from_the_view(tmp_path):
    deep = DeepReplay(6, RestoreStart("verify --recompute", 3 * MINUTE, watermark(5), {("in", 0): 600},
                                      {("in", 0): 300}, 3), seeded=True)
    texts = {b: entry(b, watermark(b), scans=("output", "late")) for b in range(5, 8)}
    view, scratch = tmp_path / "view", tmp_path / "scratch"
    write(deep, texts, '{"id":"q"}', str(view), str(scratch))
    assert sorted(int(p.name) for p in (view / "offsets").iterdir()) == [1, 2, 3]
    assert (view / "offsets" / "2").read_text() == texts[6] and (view / "offsets" / "3").read_text() == texts[7]
    assert not list((scratch / "offsets").iterdir()), "batch 0 is the seed's, written through Spark"
    replay = [json.loads(x) for x in (view / "offsets" / "1").read_text().split("\n")[2:]]
    # batch 1 starts where the seed ended (the rewind): no start recorded on its end
    assert all(model.planned_start(s) is None and model.decode(s) == {("in", 0): 600} for s in replay)
    assert [model.scan_of(s) for s in replay] == ["output", "late"] and read_restore(str(scratch)) == deep.floor
