"""maxOffsetsPerTrigger planning: bounded, fair, deterministic, no starvation."""
import random

import pytest

from kafka_eos.offsets.admission import plan_limit


def admitted(start, end):
    return sum(end[tp] - start.get(tp, end[tp]) for tp in end)


def test_everything_fits():
    start = {("t", 0): 0, ("t", 1): 10}
    avail = {("t", 0): 5, ("t", 1): 12}
    assert plan_limit(start, avail, 100) == avail


def test_max_min_fair_split():
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}
    avail = {("t", 0): 1000, ("t", 1): 2, ("t", 2): 1000}
    end = plan_limit(start, avail, 10)
    assert end == {("t", 0): 4, ("t", 1): 2, ("t", 2): 4}


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
    # max-min fairness: a partition below its availability never got less than another (minus 1)
    shares = {tp: end[tp] - start[tp] for tp in tps}
    for tp in tps:
        if end[tp] < avail[tp]:
            assert all(shares[tp] >= shares[o] - 1 for o in tps)


def test_limit_must_be_positive():
    with pytest.raises(ValueError):
        plan_limit({}, {}, 0)
