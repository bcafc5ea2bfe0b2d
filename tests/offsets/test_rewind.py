"""Savepoint rewind planning: W0, the rewind batch and offsets, the floor, the refusals.

The property tests run a small model of Spark's windowed aggregation in append mode (pyspark >= 3.4
semantics: a batch applies the watermark of the records before it, judges late rows with the
previous batch's, drops a (row, window) pair whose window end is at or behind that, evicts and emits
a window once its end is at or behind its own), save after a random batch, restore from the rewind,
and compare with the old query run on without a savepoint."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from kafka_eos.offsets.rewind import (NOTHING_BEFORE, EventTimesMissing, Floor, ReplayBeyondRetention,
                                      StateNotRebuildable, WindowSpec, check_retention, open_from, plan_rewind,
                                      retention_shortfalls)

A, B = ("in", 0), ("in", 1)
Rec = tuple[tuple[str, int], int, "int | None"]   # (partition, offset, event time)


@dataclass
class Query:
    """The model of one streaming query: window state, emitted windows, late records."""
    spec: WindowSpec
    delay: int
    applied: int = 0          # the watermark of the batch being run
    previous: int = 0         # the watermark of the batch before it (judges late rows)
    max_seen: int | None = None
    state: dict[int, int] = field(default_factory=dict)
    emitted: dict[int, int] = field(default_factory=dict)
    late: set = field(default_factory=set)

    def run(self, batch: list[Rec], floor: Floor | None = None, first: bool = False) -> None:
        if not first:
            self.previous = self.applied
            if self.max_seen is not None:
                self.applied = max(self.applied, self.max_seen - self.delay)
        size = self.spec.size_ms
        for tp, off, t in batch:
            if floor is not None and floor.drops(tp, off, t):
                continue
            judge = self.previous if floor is None else floor.late_watermark(self.previous)
            if t is None or self._last_start(t) + size <= judge:
                self.late.add((tp, off))
            if t is None or (floor is not None and not floor.keeps(t)):
                continue
            for start in self.spec.starts(t):
                if start + size > self.previous:
                    self.state[start] = self.state.get(start, 0) + 1
        seen = [t for _, _, t in batch if t is not None and (floor is None or floor.keeps(t))]
        if seen:
            self.max_seen = max(seen + ([self.max_seen] if self.max_seen is not None else []))
        self._evict(self.applied)

    def _last_start(self, t: int) -> int:
        """The start of the record's latest window (in a gap of sliding windows, of none)."""
        slide, offset = self.spec.slide_ms, self.spec.offset_ms
        return (t - offset) // slide * slide + offset

    def _evict(self, watermark: int) -> None:
        for start in [s for s in self.state if s + self.spec.size_ms <= watermark]:
            assert start not in self.emitted, "a window emitted twice"
            self.emitted[start] = self.state.pop(start)

    def flush(self) -> None:
        self._evict(2 ** 62)


def stream(rng: random.Random, n: int, t0: int = 0) -> list[tuple[tuple[str, int], int | None]]:
    """Records in arrival order: times drifting up, disorder, a few very late and null times."""
    out, now = [], t0
    for _ in range(n):
        now += rng.randint(0, 4)
        t: int | None = now - rng.randint(0, 12)
        if rng.random() < 0.05:
            t = now - rng.randint(20, 90)
        if rng.random() < 0.02:
            t = None
        out.append((rng.choice((A, B)), t))
    return out


def batches_of(records, rng: random.Random, first_offset: dict) -> list[list[Rec]]:
    """Cut records into batches, giving each its partition's next offset."""
    nxt, out, cur = dict(first_offset), [], []
    for tp, t in records:
        cur.append((tp, nxt[tp], t))
        nxt[tp] += 1
        if rng.random() < 0.12:
            out.append(cur)
            cur = []
    return out + [cur]


def starts_of(batches: list[list[Rec]], first_offset: dict) -> dict[int, dict]:
    starts, nxt = {}, dict(first_offset)
    for i, batch in enumerate(batches):
        starts[i] = dict(nxt)
        for tp, off, _ in batch:
            nxt[tp] = off + 1
    return starts | {len(batches): nxt}


def random_spec(rng: random.Random) -> WindowSpec:
    if rng.random() < 0.5:
        size = rng.randint(3, 30)
        return WindowSpec.tumbling(size, rng.randrange(size))
    slide = rng.randint(2, 12)
    return WindowSpec.sliding(rng.randint(2, 40), slide, rng.randrange(slide))


def case(seed: int):
    rng = random.Random(seed)
    spec, delay = random_spec(rng), rng.randint(0, 25)
    records = stream(rng, rng.randint(40, 400))
    cut = rng.randint(0, len(records))
    zero = {A: 0, B: 0}
    old_batches = batches_of(records[:cut], rng, zero)
    starts = starts_of(old_batches, zero)
    end = starts.pop(len(old_batches))
    future = batches_of(records[cut:], rng, end)
    return spec, delay, old_batches, starts, end, future


def save(spec, delay, old_batches, starts, end):
    old = Query(spec, delay)
    for i, batch in enumerate(old_batches):
        old.run(batch, first=i == 0)
    times = {i: max((t for _, _, t in b if t is not None), default=None) for i, b in enumerate(old_batches)}
    return old, plan_rewind(spec, old.applied, times, starts, end, NOTHING_BEFORE)


def restore(plan, spec, delay, old_batches, seed: int | None, cuts: frozenset[int] = frozenset()) -> Query:
    """The new query after the replay: one batch (empty when nothing is replayed), or batches cut
    before the old batches in ``cuts``."""
    chunks: list[list[Rec]] = [[]]
    for i, batch in enumerate(old_batches):
        if i in cuts and chunks[-1]:
            chunks.append([])
        chunks[-1] += [r for r in batch if r[1] >= plan.offsets[r[0]]]
    new = Query(spec, delay, applied=seed or 0, previous=seed or 0)
    for n, chunk in enumerate(chunks):
        new.run(chunk, plan.floor, first=n == 0)
    return new


@pytest.mark.parametrize("seed", range(300))
def test_a_restore_emits_each_window_once_with_the_counts_of_the_query_that_never_stopped(seed):
    spec, delay, old_batches, starts, end, future = case(seed)
    old, plan = save(spec, delay, old_batches, starts, end)
    W, w0 = old.applied, open_from(spec, old.applied)
    # nothing of an open window lies before the rewind point
    for tp, off, t in (r for b in old_batches for r in b):
        if t is not None and t >= w0:
            assert off >= plan.offsets[tp]
    reference = Query(spec, delay)
    for i, batch in enumerate(old_batches + future):
        reference.run(batch, first=i == 0)
    reference.flush()
    assert old.emitted == {s: n for s, n in reference.emitted.items() if s + spec.size_ms <= W}
    rng = random.Random(-seed)
    cuts = frozenset(i for i in range(len(old_batches)) if rng.random() < 0.3)   # at old batch boundaries
    new = restore(plan, spec, delay, old_batches, W, cuts if seed % 2 else frozenset())
    for batch in future:
        new.run(batch, plan.floor)
    new.flush()
    assert new.emitted == {s: n for s, n in reference.emitted.items() if s + spec.size_ms > W}
    assert new.late == {(tp, off) for tp, off in reference.late if off >= end[tp]}
    assert old.late == {(tp, off) for tp, off in reference.late if off < end[tp]}


@pytest.mark.parametrize("seed", range(150))
def test_the_replay_with_the_floor_counts_each_open_window_as_a_batch_computation(seed):
    spec, delay, old_batches, starts, end, _ = case(seed)
    old, plan = save(spec, delay, old_batches, starts, end)
    W = old.applied
    batch_counts: dict[int, int] = {}
    for _, _, t in (r for b in old_batches for r in b):
        for s in spec.starts(t) if t is not None else []:
            if s + spec.size_ms > W:
                batch_counts[s] = batch_counts.get(s, 0) + 1
    new = restore(plan, spec, delay, old_batches, W)
    assert new.state | new.emitted == batch_counts and not new.late


@pytest.mark.parametrize("seed", range(150))
def test_tumbling_windows_need_no_first_watermark(seed):
    spec, delay, old_batches, starts, end, future = case(seed)
    spec = WindowSpec.tumbling(spec.size_ms, spec.offset_ms % spec.size_ms)
    old, plan = save(spec, delay, old_batches, starts, end)
    assert not plan.needs_watermark_seed
    reference = Query(spec, delay)
    for i, batch in enumerate(old_batches + future):
        reference.run(batch, first=i == 0)
    reference.flush()
    new = restore(plan, spec, delay, old_batches, None)
    for batch in future:
        new.run(batch, plan.floor)
    new.flush()
    assert new.emitted == {s: n for s, n in reference.emitted.items() if s + spec.size_ms > old.applied}
    assert new.late == {(tp, off) for tp, off in reference.late if off >= end[tp]}


def test_overlapping_sliding_windows_without_the_first_watermark_emit_a_closed_window_again():
    spec = WindowSpec.sliding(10, 5)
    old_batches = [[(A, 0, 7), (A, 1, 22)], [(A, 2, 12)]]
    old, plan = save(spec, 5, old_batches, {0: {A: 0}, 1: {A: 2}}, {A: 3})
    W = old.applied   # 17: [0, 10) and [5, 15) emitted; 12 is also in [10, 20), open
    assert (W, plan.floor.w0_ms, plan.rewind_batch, plan.needs_watermark_seed) == (17, 10, 0, True)
    assert old.emitted == {0: 1, 5: 2}
    unseeded = restore(plan, spec, 5, old_batches, None)
    unseeded.run([], plan.floor)
    assert unseeded.emitted == {5: 1}   # [5, 15) closed at W: emitted by both queries
    seeded = restore(plan, spec, 5, old_batches, W)
    seeded.flush()
    assert seeded.emitted == {10: 1, 15: 1, 20: 1}


def test_a_replay_cut_inside_an_old_batch_can_drop_a_record_of_an_open_window():
    spec = WindowSpec.tumbling(10)
    old_batches = [[(A, 0, 15)], [(A, 1, 40), (A, 2, 30), (A, 3, 22)]]
    old, plan = save(spec, 0, old_batches, {0: {A: 0}, 1: {A: 1}}, {A: 4})
    assert (old.applied, plan.rewind_batch, old.state[20]) == (15, 0, 1)   # [20, 30) open at W, 22 counted
    at_old_cuts = restore(plan, spec, 0, old_batches, 15, frozenset({1}))
    assert at_old_cuts.state[20] == 1
    inside = Query(spec, 0, applied=15, previous=15)
    for n, chunk in enumerate([[(A, 0, 15), (A, 1, 40)], [(A, 2, 30)], [(A, 3, 22)]]):
        inside.run(chunk, plan.floor, first=n == 0)
    assert 20 not in inside.state and 20 not in inside.emitted   # 22 judged late by the watermark 40


@pytest.mark.parametrize("seed", range(200))
def test_w0_is_the_start_of_the_earliest_window_open_at_the_watermark(seed):
    rng = random.Random(seed)
    spec, W = random_spec(rng), rng.randint(-50, 500)
    starts = {s for t in range(W - 100, W + 100) for s in spec.starts(t)}
    assert open_from(spec, W) == min(s for s in starts if s + spec.size_ms > W)


def test_the_rewind_batch_is_the_first_that_may_hold_an_open_window_and_unknown_batches_count():
    spec, starts = WindowSpec.tumbling(10), {3: {A: 30}, 4: {A: 40}, 5: {A: 50}, 6: {A: 60}}
    plan = plan_rewind(spec, 25, {3: 15, 4: 19, 5: 21, 6: 28}, starts, {A: 70}, 5)
    assert (plan.rewind_batch, plan.offsets, plan.floor) == (5, {A: 50}, Floor(20, 25, {A: 70}))
    assert plan_rewind(spec, 25, {3: 15, 5: 21, 6: 28}, starts, {A: 70}, 5).rewind_batch == 4
    nothing = plan_rewind(spec, 25, {3: 15, 4: None, 5: 19, 6: None}, starts, {A: 70}, 5)
    assert (nothing.rewind_batch, nothing.offsets, nothing.floor) == (None, {A: 70}, Floor(20, 25, {A: 70}))


def test_a_partition_first_read_after_the_rewind_batch_starts_where_it_was_first_read():
    starts = {0: {A: 0}, 1: {A: 5}, 2: {A: 9, B: 3}}
    plan = plan_rewind(WindowSpec.sliding(10, 5), 12, {0: 4, 1: 8, 2: 14}, starts, {A: 12, B: 7}, NOTHING_BEFORE)
    assert (plan.rewind_batch, plan.offsets) == (1, {A: 5, B: 3})


def test_the_batches_before_the_earliest_record_must_be_bounded_below_w0():
    starts, times = {7: {A: 70}, 8: {A: 80}}, {7: 30, 8: 31}
    with pytest.raises(EventTimesMissing, match="before batch 7 .* unknown"):
        plan_rewind(WindowSpec.tumbling(10), 25, times, starts, {A: 90}, None)
    with pytest.raises(EventTimesMissing, match="up to 20 ms"):
        plan_rewind(WindowSpec.tumbling(10), 25, times, starts, {A: 90}, 20)
    assert plan_rewind(WindowSpec.tumbling(10), 25, times, starts, {A: 90}, 19).rewind_batch == 7
    with pytest.raises(EventTimesMissing, match=r"batches \[8\]"):
        plan_rewind(WindowSpec.tumbling(10), 25, times, {7: {A: 70}, 9: {A: 85}}, {A: 90}, 19)


def test_no_batch_known_is_refused_with_the_way_on_never_a_plan_that_replays_nothing():
    """Before: an empty batch table gave rewind batch None and the end as the rewind: the windows open
    at the savepoint restored (or re-run) without their records so far."""
    for bound in (None, NOTHING_BEFORE, 19):
        with pytest.raises(EventTimesMissing, match="no batch's start offsets are known") as refused:
            plan_rewind(WindowSpec.tumbling(10), 25, {}, {}, {A: 90}, bound)
        said = str(refused.value)
        assert "from 20 ms on" in said and "Take the savepoint while the event-time records" in said, said
        assert "start a new checkpoint.location" in said, said
    with pytest.raises(EventTimesMissing, match="no batch's start offsets are known"):
        plan_rewind(WindowSpec.sliding(10, 5), 25, {3: 30}, {}, {A: 90}, 19)  # times without starts: unknown
    assert plan_rewind(WindowSpec("stateless"), 25, {}, {}, {A: 90}, None).offsets == {A: 90}  # nothing to rebuild


def test_a_stateless_plan_replays_nothing_and_the_others_are_refused_with_the_way_on():
    plan = plan_rewind(WindowSpec("stateless"), 0, {}, {0: {A: 0}}, {A: 9}, None)
    assert (plan.rewind_batch, plan.offsets, plan.floor) == (None, {A: 9}, None)
    for kind, why in [("session", "without bound"), ("no_watermark", "never closes"),
                      ("stream_join", "as they are found"), ("dedup", "when first seen"),
                      ("arbitrary_state", "no window bound")]:
        with pytest.raises(StateNotRebuildable, match=f"{why}.*new checkpoint.location"):
            plan_rewind(WindowSpec(kind), 0, {}, {}, {}, None)


def test_the_floor_drops_only_replayed_records_of_closed_windows():
    floor = Floor(20, 25, {A: 10})
    assert floor.drops(A, 9, 19) and floor.drops(A, 9, None) and not floor.drops(A, 9, 20)
    assert not floor.drops(A, 10, 3) and not floor.drops(B, 0, 3)   # new input: judged late instead
    assert not floor.keeps(19) and floor.keeps(20) and not floor.keeps(None)
    assert (floor.late_watermark(0), floor.late_watermark(40)) == (25, 40)


def test_a_replay_beyond_retention_names_partition_offsets_and_retention():
    rewind, end = {A: 100, B: 50}, {A: 900, B: 50}
    assert retention_shortfalls(rewind, end, {A: 100, B: 60}) == []   # B replays nothing
    with pytest.raises(ReplayBeyondRetention, match=r"in-0: the replay starts at offset 100, the earliest offset "
                                                    r"is 400 \(retention.ms 3600000\).*retention.ms above"):
        check_retention(rewind, end, {A: 400, B: 60}, {"in": 3_600_000})
    with pytest.raises(ReplayBeyondRetention, match="retention.ms unknown"):
        check_retention(rewind, end, {A: 400}, {})


def spark_restore(plan, spec, delay, old_batches, W: int, replay_as_batch_0: bool = False) -> Query:
    """The restore as Spark 4.x runs it: batch b judges late rows with offsets/b-1's watermark (0 for
    batch 0, which has none) and evicts with offsets/b's; a restart sets the watermark to its newest
    entry's. The seed: an empty batch 0 under W, the replay as batch 1; the first design: the
    replay itself as batch 0 under W."""
    replay = [r for batch in old_batches for r in batch if r[1] >= plan.offsets[r[0]]]
    new = Query(spec, delay, applied=W, previous=0)
    if replay_as_batch_0:
        new.run(replay, plan.floor, first=True)
    else:
        new.run([], plan.floor, first=True)
        new.run(replay, plan.floor)
    return new


@pytest.mark.parametrize("seed", range(300))
def test_the_seed_an_empty_batch_0_under_w_makes_sliding_windows_exact(seed):
    spec, delay, old_batches, starts, end, future = case(seed)
    if not spec.overlapping:
        spec = WindowSpec.sliding(spec.size_ms + spec.slide_ms, spec.slide_ms, spec.offset_ms)
    old, plan = save(spec, delay, old_batches, starts, end)
    assert plan.needs_watermark_seed
    reference = Query(spec, delay)
    for i, batch in enumerate(old_batches + future):
        reference.run(batch, first=i == 0)
    reference.flush()
    new = spark_restore(plan, spec, delay, old_batches, old.applied)
    for batch in future:
        new.run(batch, plan.floor)
    new.flush()
    assert new.emitted == {s: n for s, n in reference.emitted.items() if s + spec.size_ms > old.applied}
    assert new.late == {(tp, off) for tp, off in reference.late if off >= end[tp]}


def test_the_replay_as_batch_0_under_w_still_emits_a_closed_window_again():
    spec = WindowSpec.sliding(10, 5)
    old_batches = [[(A, 0, 7), (A, 1, 22)], [(A, 2, 12)]]
    old, plan = save(spec, 5, old_batches, {0: {A: 0}, 1: {A: 2}}, {A: 3})
    assert old.applied == 17 and old.emitted == {0: 1, 5: 2}
    as_batch_0 = spark_restore(plan, spec, 5, old_batches, 17, replay_as_batch_0=True)
    assert as_batch_0.emitted == {5: 1}   # its late rows judged with 0: [5, 15) rebuilt from 12, evicted at 17
    seeded = spark_restore(plan, spec, 5, old_batches, 17)
    assert seeded.emitted == {} and seeded.state == {10: 1, 15: 1, 20: 1}   # [5, 15) dropped as late at W
