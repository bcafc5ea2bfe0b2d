"""Offset ranges and minPartitions splitting: exact cover, no overlap."""
import random

import pytest

from kafka_eos.offsets.ranges import OffsetRange, ranges_between, split_ranges


def covered(ranges):
    out = []
    for r in ranges:
        out += [(r.topic, r.partition, o) for o in range(r.start, r.end)]
    return out


def test_ranges_between_skips_empty_new_and_backwards():
    start = {("a", 0): 5, ("a", 1): 3, ("b", 0): 9}
    end = {("a", 0): 8, ("a", 1): 3, ("b", 0): 2, ("c", 0): 0}
    assert ranges_between(start, end) == [OffsetRange("a", 0, 5, 8)]


def test_no_split_when_enough_partitions():
    ranges = [OffsetRange("a", 0, 0, 100), OffsetRange("a", 1, 0, 5)]
    assert split_ranges(ranges, 2) == ranges
    assert split_ranges(ranges, None) == ranges


def test_split_proportionally():
    ranges = [OffsetRange("a", 0, 0, 90), OffsetRange("a", 1, 0, 10)]
    pieces = split_ranges(ranges, 10)
    assert len([p for p in pieces if p.partition == 0]) == 9
    assert len([p for p in pieces if p.partition == 1]) == 1
    assert covered(pieces) == covered(ranges)


@pytest.mark.parametrize("seed", range(20))
def test_split_exact_cover_random(seed):
    rnd = random.Random(seed)
    ranges = []
    for p in range(rnd.randint(1, 4)):
        s = rnd.randint(0, 50)
        ranges.append(OffsetRange("t", p, s, s + rnd.randint(0, 40)))
    pieces = split_ranges(ranges, rnd.randint(1, 30))
    assert covered(pieces) == covered(ranges)  # same offsets, same order, no repeats
    assert all(p.size > 0 for p in pieces)


def test_pack_ranges_groups_whole_ranges_balanced_by_records():
    from kafka_eos.offsets.ranges import pack_ranges
    ranges = [OffsetRange("t", p, 0, size) for p, size in enumerate([100, 10, 10, 80, 0, 30])]
    groups = pack_ranges(ranges, 2)
    assert len(groups) == 2
    assert sorted(str(r) for g in groups for r in g) == sorted(str(r) for r in ranges if r.size)  # each once, none cut
    assert sorted(sum(r.size for r in g) for g in groups) == [110, 120]
    assert [[r.partition for r in g] for g in groups] == [[0, 1, 2], [3, 5]]
    assert pack_ranges(list(reversed(ranges)), 2) == groups  # the same ranges, the same tasks


def test_pack_ranges_unset_or_enough_groups_keeps_one_range_per_task():
    from kafka_eos.offsets.ranges import pack_ranges
    ranges = [OffsetRange("t", p, 0, 5) for p in range(3)]
    assert pack_ranges(ranges, None) == [(r,) for r in ranges]
    assert pack_ranges(ranges, 3) == [(r,) for r in ranges]
    assert pack_ranges(ranges, 1) == [tuple(ranges)]


def test_task_count_is_the_cap_else_the_slots_never_more_than_the_ranges():
    from kafka_eos.offsets.ranges import OffsetRange, task_count
    eight = [OffsetRange("t", p, 0, 10) for p in range(8)]
    assert task_count(eight, cores=2, cap=None) == 2
    assert task_count(eight, cores=2, cap=5) == 5
    assert task_count(eight, cores=16, cap=None) == 8
    assert task_count(eight, cores=2, cap=None, min_partitions=4) == 4
    assert task_count([OffsetRange("t", 0, 3, 3)], cores=2, cap=None) == 1  # nothing to read: one
