"""maxOffsetsPerTrigger planning: bounded, proportional to backlog (as Spark), deterministic, no starvation."""
import math
import random

import pytest

from kafka_eos.offsets.admission import plan_limit


def admitted(start, end):
    return sum(end[tp] - start.get(tp, end[tp]) for tp in end)


def test_everything_fits():
    start = {("t", 0): 0, ("t", 1): 10}
    avail = {("t", 0): 5, ("t", 1): 12}
    assert plan_limit(start, avail, 100) == avail


def test_split_is_proportional_to_backlog():
    """A keyed topic: partition 0 carries two keys' traffic, 1 and 2 one each. Spark's rateLimit
    gives 750/375/375 of 1500; an equal split (500 each) would read 1 and 2 ahead in event time."""
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}
    avail = {("t", 0): 4000, ("t", 1): 2000, ("t", 2): 2000}
    assert plan_limit(start, avail, 1500) == {("t", 0): 750, ("t", 1): 375, ("t", 2): 375}


def test_small_partition_is_not_starved():
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}
    avail = {("t", 0): 1000, ("t", 1): 2, ("t", 2): 1000}
    end = plan_limit(start, avail, 10)
    assert end[("t", 1)] == 1 and end[("t", 0)] + end[("t", 2)] == 9 and abs(end[("t", 0)] - end[("t", 2)]) <= 1


def spark_rate_limit(limit, start, avail):
    """Spark's KafkaMicroBatchStream.rateLimit, for comparison."""
    sizes = {tp: avail[tp] - start[tp] for tp in avail if avail[tp] > start[tp]}
    total = sum(sizes.values())
    out = {}
    for tp, end in avail.items():
        if tp not in sizes:
            out[tp] = end
            continue
        prorate = limit * (sizes[tp] / total)
        out[tp] = min(end, start[tp] + int(math.ceil(prorate) if prorate < 1 else math.floor(prorate)))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_within_one_offset_of_sparks_split(seed):
    rnd = random.Random(seed)
    tps = [("t", p) for p in range(rnd.randint(1, 12))]
    start = {tp: rnd.randint(0, 10_000) for tp in tps}
    avail = {tp: start[tp] + rnd.choice([0, 5, 100, 3_000, 50_000]) for tp in tps}
    limit = rnd.randint(len(tps), 20_000)
    ours, spark = plan_limit(start, avail, limit), spark_rate_limit(limit, start, avail)
    assert all(abs(ours[tp] - spark[tp]) <= 1 for tp in tps), (ours, spark)


def test_budget_smaller_than_partitions_rotates():
    tps = [("t", p) for p in range(3)]
    start = dict.fromkeys(tps, 0)
    avail = dict.fromkeys(tps, 100)
    served = set()
    for _ in range(3):
        end = plan_limit(start, avail, 1)
        assert admitted(start, end) == 1
        served |= {tp for tp in tps if end[tp] > start[tp]}
        start = end
    assert served == set(tps)


def test_partition_without_start_is_not_read():
    end = plan_limit({("t", 0): 0}, {("t", 0): 10, ("t", 1): 4}, 3)
    assert end == {("t", 0): 3, ("t", 1): 4}


@pytest.mark.parametrize("seed", range(30))
def test_invariants_random(seed):
    rnd = random.Random(seed)
    tps = [("t", p) for p in range(rnd.randint(1, 8))]
    start = {tp: rnd.randint(0, 100) for tp in tps}
    avail = {tp: start[tp] + rnd.choice([0, 0, 1, 3, 50, 1000]) for tp in tps}
    limit = rnd.randint(1, 300)
    end = plan_limit(start, avail, limit)
    assert all(start[tp] <= end[tp] <= avail[tp] for tp in tps)
    assert admitted(start, end) == min(limit, admitted(start, avail))
    assert end == plan_limit(dict(reversed(start.items())), avail, limit)  # deterministic
    # proportional: when the budget is short, each partition with data gets its share of the
    # budget by backlog, rounded down or up, at least 1; the offsets those minimums overdraw come
    # from the larger shares
    room = {tp: avail[tp] - start[tp] for tp in tps if avail[tp] > start[tp]}
    if len(room) <= limit < sum(room.values()):
        exact = {tp: limit * n / sum(room.values()) for tp, n in room.items()}
        overdrawn = sum(1 for q in exact.values() if q < 1)
        for tp in room:
            assert max(1, math.floor(exact[tp]) - overdrawn) <= end[tp] - start[tp] <= max(1, math.ceil(exact[tp]))


def test_limit_must_be_positive():
    with pytest.raises(ValueError):
        plan_limit({}, {}, 0)
