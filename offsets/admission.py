"""Admission control: how far each partition may advance in one micro-batch.

Invariants of ``plan_limit(start, available_end, max_records)``:
- every returned end lies in [start, available_end] of its partition;
- the ends add up to exactly ``min(max_records, total available)`` offsets, never more;
- the split is proportional to each partition's backlog, as Spark's own Kafka source splits
  ``maxOffsetsPerTrigger`` (``KafkaMicroBatchStream.rateLimit``): partitions advance at the same
  relative rate, so on a keyed topic whose partitions differ in volume no partition runs ahead of
  the others in event time. Each partition's end is within one offset of Spark's; unlike Spark's
  floor/ceil rounding, which can admit a few offsets more or fewer than the limit, the total is
  exact. Like Spark, no partition with data is starved: each gets at least one offset when the
  budget allows;
- it is deterministic: the same inputs give the same plan (a replayed batch plans the same ends).
  When the budget is smaller than the number of partitions with data, the single offsets go to
  partitions in an order rotated by the sum of the start offsets, so over successive batches every
  partition advances.

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
    active = sorted(tp for tp, n in room.items() if n > 0)
    if sum(room.values()) <= max_records:
        share = room
    elif max_records < len(active):
        share = _rotated_singles(active, begin, max_records)
    else:
        share = _proportional(active, begin, room, max_records)
    return {tp: begin[tp] + share.get(tp, 0) for tp in available_end}


def _rotation(active: list[TopicPartition], begin: Mapping[TopicPartition, int]) -> list[TopicPartition]:
    turn = sum(begin[tp] for tp in active) % len(active)
    return active[turn:] + active[:turn]


def _rotated_singles(active: list[TopicPartition], begin: Mapping[TopicPartition, int],
                     budget: int) -> dict[TopicPartition, int]:
    return dict.fromkeys(_rotation(active, begin)[:budget], 1)


def _proportional(active: list[TopicPartition], begin: Mapping[TopicPartition, int],
                  room: Mapping[TopicPartition, int], budget: int) -> dict[TopicPartition, int]:
    """Spark's split (``budget * backlog / total``, rounded down, at least 1), then made exact:
    what rounding left over goes by largest remainder, what the minimum of 1 overdrew comes back
    from the largest shares, one offset at a time. Needs ``len(active) <= budget < sum(room)``."""
    total = sum(room[tp] for tp in active)
    order = {tp: i for i, tp in enumerate(_rotation(active, begin))}
    share = {tp: max(1, budget * room[tp] // total) for tp in active}
    remainder = {tp: budget * room[tp] % total if share[tp] < room[tp] and budget * room[tp] >= total else 0
                 for tp in active}
    leftover = budget - sum(share.values())
    for tp in sorted(active, key=lambda t: (-remainder[t], order[t]))[:max(0, leftover)]:
        share[tp] += 1
    for _ in range(max(0, -leftover)):
        share[max(active, key=lambda t: (share[t], -order[t]))] -= 1
    return share
