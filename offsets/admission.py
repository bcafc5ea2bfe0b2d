"""Admission control: how far each partition may advance in one micro-batch.

Invariants of ``plan_limit(start, available_end, max_records)``:
- every returned end lies in [start, available_end] of its partition;
- the ends add up to exactly ``min(max_records, total available)`` offsets, never more;
- the split is max-min fair: each partition with data gets an equal share, and what a partition
  does not need goes to the others (a busy partition cannot starve a quiet one);
- it is deterministic: the same inputs give the same plan. When the budget is smaller than the
  number of partitions with data, the single leftover offsets go to partitions in an order
  rotated by the sum of the start offsets, so over successive batches every partition advances.

Offsets count records, transaction markers and aborted records alike, so a batch of N offsets
outputs at most N rows.
"""
from __future__ import annotations

from typing import Mapping

from kafka_eos.offsets.model import Offsets, TopicPartition


def plan_limit(start: Mapping[TopicPartition, int], available_end: Mapping[TopicPartition, int],
               max_records: int) -> Offsets:
    """Ends for every partition of ``available_end`` admitting at most ``max_records`` offsets.

    A partition missing from ``start`` is treated as having nothing to read (end = its
    ``available_end``, which callers set to where it will be read from).
    """
    if max_records < 1:
        raise ValueError(f"maxOffsetsPerTrigger must be at least 1, got {max_records}")
    begin = {tp: start.get(tp, end) for tp, end in available_end.items()}
    room = {tp: max(0, available_end[tp] - begin[tp]) for tp in available_end}
    share = dict.fromkeys(available_end, 0)
    active = sorted(tp for tp, n in room.items() if n > 0)
    budget = max_records
    while active and budget > 0:
        each = budget // len(active)
        if each == 0:
            turn = sum(begin[tp] for tp in active) % len(active)
            for tp in (active[turn:] + active[:turn])[:budget]:
                share[tp] += 1
            break
        still = []
        for tp in active:
            give = min(each, room[tp] - share[tp])
            share[tp] += give
            budget -= give
            if share[tp] < room[tp]:
                still.append(tp)
        active = still
    return {tp: begin[tp] + share[tp] for tp in available_end}
