"""Offset ranges: what one Spark task reads from one Kafka partition.

Invariants:
- A range is half-open, [start, end): it reads committed records with start <= offset < end.
- ``ranges_between`` makes one range per partition that has offsets to read; partitions whose
  end is at or below their start, or that are missing from the start map (partitions that first
  appear in this batch's end, at the offset they will be read from), give no range.
- ``split_ranges`` only cuts ranges into contiguous, non-overlapping pieces: the union of the
  pieces is exactly the union of the inputs, so splitting never skips or repeats an offset.
- ``task_count`` is at least 1 and never more than the ranges (or minPartitions, when set).
- ``pack_ranges`` only groups ranges (each range in exactly one group, none cut), the same
  ranges always giving the same groups in the same order: a replayed batch gets the same tasks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kafka_eos.offsets.model import TopicPartition


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} [{self.start}, {self.end})"


def ranges_between(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """One range per partition of ``end`` with offsets left to read, sorted by topic-partition."""
    return [OffsetRange(tp[0], tp[1], start[tp], end[tp]) for tp in sorted(end)
            if tp in start and end[tp] > start[tp]]


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Cut ranges so there are about ``min_partitions`` pieces (Spark's KafkaOffsetRangeCalculator).

    Each range gets pieces in proportion to its size (at least one); with ``min_partitions``
    unset or already met, ranges are returned unchanged.
    """
    ranges = [r for r in ranges if r.size > 0]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        pieces = max(1, min(r.size, round(r.size / total * min_partitions)))
        remaining, begin = r.size, r.start
        for i in range(pieces):
            part = remaining // (pieces - i)
            remaining -= part
            if part:
                out.append(OffsetRange(r.topic, r.partition, begin, begin + part))
            begin += part
    return out


def task_count(ranges: Iterable[OffsetRange], cores: int, cap: int | None,
               min_partitions: int | None = None) -> int:
    """The tasks a batch of ``ranges`` (already split for ``min_partitions``) is read in: ``cap``
    (maxTasksPerBatch) when set, else ``cores`` (the cluster's task slots; raised to
    ``min_partitions``), never more than the ranges. A task's fixed cost (its Python workers, a
    consumer, a producer and a transaction) is paid once per task, so more tasks than slots only
    add cost; whole ranges are then grouped by ``pack_ranges``."""
    pieces = sum(1 for r in ranges if r.size > 0)
    limit = cap if cap else max(cores, min_partitions or 1)
    return max(1, min(pieces, limit))


def pack_ranges(ranges: Iterable[OffsetRange], max_groups: int | None) -> list[tuple[OffsetRange, ...]]:
    """At most ``max_groups`` groups of whole ranges, balanced by records: the largest range goes
    to the group with the fewest records so far (ties: the lower index). Each group lists its
    ranges by topic-partition and offset; groups come in the order of their first range.
    Unset, or no more ranges than groups: one group per range, in the given order."""
    ranges = [r for r in ranges if r.size > 0]
    if not max_groups or len(ranges) <= max_groups:
        return [(r,) for r in ranges]
    groups: list[list[OffsetRange]] = [[] for _ in range(max_groups)]
    loads = [0] * max_groups
    for r in sorted(ranges, key=lambda r: (-r.size, r.topic, r.partition, r.start)):
        i = loads.index(min(loads))
        groups[i].append(r)
        loads[i] += r.size
    ordered = [tuple(sorted(g, key=lambda r: (r.topic, r.partition, r.start))) for g in groups if g]
    return sorted(ordered, key=lambda g: (g[0].topic, g[0].partition, g[0].start))
