"""Event-time alignment planning, with a fake log: bounded spread, progress, idleness, admission."""
import random

import pytest

from kafka_eos.offsets.admission import plan_limit
from kafka_eos.offsets.alignment import IdleTracker, align

A, B, C = ("t", 0), ("t", 1), ("t", 2)


class FakeLog:
    """Per partition: one entry per offset, a committed record's timestamp or ("x", ts) for an
    aborted record / transaction marker (has a timestamp, is never read)."""

    def __init__(self, logs):
        self.logs = logs
        self.calls = {"heads": 0, "offsets_at": 0}

    def heads(self, starts):
        self.calls["heads"] += 1
        out = {}
        for tp, start in starts.items():
            out[tp] = next(((o, e) for o, e in enumerate(self.logs[tp]) if o >= start and isinstance(e, int)), None)
        return out

    def offsets_at(self, times):
        self.calls["offsets_at"] += 1
        return {tp: next((o for o, e in enumerate(self.logs[tp]) if self._ts(e) >= t), None)
                for tp, t in times.items()}

    @staticmethod
    def _ts(entry):
        return entry[1] if isinstance(entry, tuple) else entry

    def ends(self):
        return {tp: len(log) for tp, log in self.logs.items()}

    def records(self, start, end):
        return {tp: [e for e in self.logs[tp][start.get(tp, end[tp]):end[tp]] if isinstance(e, int)] for tp in end}


def run(log, drift, budget=None, held=None, start=None):
    """Plan batches until everything is read; returns the admitted record timestamps per batch."""
    start = dict(start or {tp: 0 for tp in log.logs})
    batches = []
    while start != log.ends():
        plan = align(start, log.ends(), drift, log.heads, log.offsets_at, held)
        end = plan_limit(start, plan.ends, budget) if budget else plan.ends
        assert end != start, "an empty batch while data is pending"
        batches.append((plan, log.records(start, end)))
        start = end
        assert len(batches) < 10_000
    return batches


def spread(batch_records):
    times = [t for ts in batch_records.values() for t in ts]
    return max(times) - min(times) if times else 0


def test_skewed_partitions_stay_within_the_drift():
    """A: three keys' traffic, dense in the first half; B and C: one key each, uniform."""
    dense = sorted([t for t in range(0, 300_000, 1000) for _ in range(3)] + list(range(300_000, 600_000, 10_000)))
    log = FakeLog({A: dense, B: list(range(0, 600_000, 1000)), C: list(range(500, 600_000, 1000))})
    batches = run(log, drift=30_000)
    assert all(spread(records) <= 30_000 for _, records in batches)
    read = {tp: [t for _, r in batches for t in r[tp]] for tp in log.logs}
    assert read == {tp: log.logs[tp] for tp in log.logs}  # everything, in order, once
    unaligned = plan_limit({tp: 0 for tp in log.logs}, log.ends(), 500)
    assert spread(log.records({tp: 0 for tp in log.logs}, unaligned)) > 100_000  # what alignment prevents


def test_one_lookup_of_each_kind_per_batch():
    log = FakeLog({A: list(range(0, 100_000, 100)), B: list(range(0, 100_000, 300)), C: list(range(0, 100_000, 50))})
    batches = run(log, drift=5_000)
    assert log.calls["heads"] == len(batches) and log.calls["offsets_at"] <= len(batches)


def test_slowest_partition_always_advances_even_with_zero_drift():
    log = FakeLog({A: [5, 5, 5, 9], B: [7, 7, 8], C: []})
    batches = run(log, drift=0)
    assert [sorted(t for ts in r.values() for t in ts) for _, r in batches] == [[5, 5, 5], [7, 7], [8], [9]]


def test_partition_far_ahead_waits():
    log = FakeLog({A: list(range(0, 10)), B: list(range(1_000, 1_010))})
    plan = align({A: 0, B: 0}, log.ends(), 3, log.heads, log.offsets_at)
    assert plan.ends == {A: 4, B: 0} and plan.slowest == A and plan.frontier == 0


def test_aborted_records_and_markers_with_late_timestamps_never_stall():
    """A marker stamped with the commit time (far ahead) right at the start of the slowest partition."""
    log = FakeLog({A: [("x", 10**9), 1, 2, ("x", 10**9), 3], B: [1, 2, 3, 4]})
    batches = run(log, drift=1)
    read = {tp: [t for _, r in batches for t in r[tp]] for tp in log.logs}
    assert read == {A: [1, 2, 3], B: [1, 2, 3, 4]}
    assert all(spread(r) <= 1 for _, r in batches)


def test_held_partition_holds_all_but_the_slowest():
    """C has no data now but is not idle (last record at 100): only the slowest may pass 100 + drift."""
    log = FakeLog({A: list(range(200, 300)), B: list(range(210, 300)), C: []})
    plan = align({A: 0, B: 0, C: 0}, log.ends(), 10, log.heads, log.offsets_at, held={C: 100})
    assert plan.frontier == 100 and plan.ends == {A: 11, B: 0, C: 0}
    idle = align({A: 0, B: 0, C: 0}, log.ends(), 10, log.heads, log.offsets_at, held={})
    assert idle.ends == {A: 11, B: 1, C: 0}  # idle C holds nothing: B reads up to 210 + 0


def test_held_time_of_a_partition_with_data_is_its_head():
    log = FakeLog({A: list(range(200, 300)), B: list(range(210, 300))})
    plan = align({A: 0, B: 0}, log.ends(), 10, log.heads, log.offsets_at, held={A: 5, B: 7})
    assert plan.frontier == 200 and plan.ends == {A: 11, B: 1}


def test_upper_bound_wins_and_heads_past_it_do_not_count():
    """Trigger.AvailableNow's target (or the last stable offset) caps every end."""
    log = FakeLog({A: [1, 2, 3, 4], B: [("x", 0), ("x", 0), 0, 1]})
    plan = align({A: 0, B: 0}, {A: 2, B: 2}, 100, log.heads, log.offsets_at)
    assert plan.ends == {A: 2, B: 2} and B not in plan.heads


@pytest.mark.parametrize("seed", range(20))
def test_random_logs_with_admission(seed):
    rnd = random.Random(seed)
    logs = {}
    for tp in (A, B, C):
        t, entries = rnd.randrange(0, 5_000), []
        for _ in range(rnd.randrange(0, 400)):
            t += rnd.choice([0, 10, 50, 400])
            entries.append(t)
        logs[tp] = entries
    log = FakeLog(logs)
    budget, drift = rnd.choice([None, 1, 2, 7, 50]), rnd.choice([0, 100, 1_000])
    batches = run(log, drift=drift, budget=budget)
    for plan, records in batches:
        slowest = plan.heads[plan.slowest][1]
        assert all(slowest <= t <= slowest + drift for ts in records.values() for t in ts)
        if budget:
            assert sum(len(ts) for ts in records.values()) <= budget
    read = {tp: [t for _, r in batches for t in r[tp]] for tp in logs}
    assert read == logs


def test_idle_tracker():
    now = [0.0]
    tracker = IdleTracker(30_000, lambda: now[0])
    assert tracker.observe({A: 5, B: 5}) == set()
    now[0] = 29.0
    assert tracker.observe({A: 5, B: 6}) == set()
    now[0] = 31.0
    assert tracker.observe({A: 5, B: 6}) == {A}
    now[0] = 70.0
    assert tracker.observe({B: 6}) == {B}
