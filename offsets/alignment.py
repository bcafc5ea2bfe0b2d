"""Event-time alignment: end offsets that keep partitions close in record time (watermark alignment).

``align(start, upper, drift_ms, heads, offsets_at, held)`` plans one micro-batch. Each partition
with data between its start and ``upper`` has a *head*: the first committed record at or after its
start and below ``upper`` (offset and Kafka record timestamp, from ``heads``). With ``s`` the partition of the
smallest head timestamp ``h_s`` (the slowest partition), and the frontier
``F = min(h_s, held times)``:
- the slowest partition ends at the first offset whose timestamp exceeds ``h_s + drift_ms``;
- every other partition ends at the first offset whose timestamp exceeds ``F + drift_ms``
  (nothing, if its head is already past that);
- no end passes ``upper`` and none goes below the start.

``held`` maps partitions that have no data now but are not idle to the last record time the
caller knows for them: such a partition holds every partition but the slowest back (as a
non-idle Flink split holds its watermark); an idle partition, or one without a known time, holds
nothing. Idleness and held times only shape batches, never what is read in total.

Invariants (for the ends returned; ``offsets_at`` answers "first offset with timestamp >= T",
Kafka's ListOffsets by timestamp, so every offset below its answer has a smaller timestamp):
- every committed record admitted has a timestamp <= ``h_s + drift_ms``, and the first admitted
  record of each partition has a timestamp >= ``h_s``: with records in timestamp order within
  each partition, the admitted records of one batch span at most ``drift_ms`` of record time
  (plus the disorder inside a partition);
- progress: when any partition has a head, the slowest partition's end lies past its head
  record, so a batch is never empty while committed records are pending;
- bounded work: one ``heads`` call and at most one ``offsets_at`` call per batch, whatever the
  number of partitions;
- pure: the ends depend only on the arguments. A replayed batch is not planned again: Spark
  stores every planned end in its offset log before the batch runs and replays from it.

Out-of-order timestamps, including transaction markers (stamped with the commit time), can make
the lookup answer early: the batch gets smaller, never wider, and the head record is still read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from kafka_eos.offsets.model import Offsets, TopicPartition

Head = tuple[int, int]
"""(offset, record timestamp in ms) of the first committed record at or after a start offset."""
HeadLookup = Callable[[Mapping[TopicPartition, int]], Mapping[TopicPartition, Head | None]]
TimeLookup = Callable[[Mapping[TopicPartition, int]], Mapping[TopicPartition, int | None]]


@dataclass(frozen=True)
class AlignedPlan:
    ends: Offsets
    heads: dict[TopicPartition, Head] = field(default_factory=dict)
    slowest: TopicPartition | None = None
    frontier: int | None = None   # F: the time every partition but the slowest is bounded by (+ drift)


def align(start: Mapping[TopicPartition, int], upper: Mapping[TopicPartition, int], drift_ms: int,
          heads: HeadLookup, offsets_at: TimeLookup,
          held: Mapping[TopicPartition, int] | None = None) -> AlignedPlan:
    """Aligned ends for every partition of ``upper`` (see the module invariants)."""
    if drift_ms < 0:
        raise ValueError(f"the alignment drift must not be negative, got {drift_ms} ms")
    pending = {tp: start[tp] for tp in upper if tp in start and upper[tp] > start[tp]}
    answered = heads(pending) if pending else {}
    found = {tp: h for tp, h in answered.items() if h is not None and tp in pending and h[0] < upper[tp]}
    if not found:
        return AlignedPlan(ends=dict(upper))
    slowest = min(found, key=lambda tp: (found[tp][1], tp))
    holding = [t for tp, t in (held or {}).items() if tp not in found]
    frontier = min([found[slowest][1], *holding])
    bound = {tp: (found[tp][1] if tp == slowest else frontier) + drift_ms for tp in found}
    ends = dict(upper)
    ends.update({tp: start[tp] for tp in found if found[tp][1] > bound[tp]})
    query = {tp: bound[tp] + 1 for tp in found if found[tp][1] <= bound[tp]}
    answers = offsets_at(query) if query else {}
    for tp in query:
        cut = answers.get(tp)
        end = upper[tp] if cut is None else min(upper[tp], cut)
        ends[tp] = min(upper[tp], max(end, found[tp][0] + 1))  # the head itself is within bound
    return AlignedPlan(ends=ends, heads=found, slowest=slowest, frontier=frontier)


class IdleTracker:
    """Which partitions' log ends have not moved for ``timeout_ms`` (kept in memory by the planner).

    A partition seen for the first time, or whose end moved, is not idle. Losing this memory (a
    restarted driver) only delays idleness by one timeout: it shapes batches, never what is read.
    """

    def __init__(self, timeout_ms: int, clock: Callable[[], float]) -> None:
        self._timeout_s = timeout_ms / 1000.0
        self._clock = clock
        self._since: dict[TopicPartition, tuple[int, float]] = {}

    def observe(self, log_ends: Mapping[TopicPartition, int]) -> set[TopicPartition]:
        now = self._clock()
        for tp, end in log_ends.items():
            seen = self._since.get(tp)
            if seen is None or seen[0] != end:
                self._since[tp] = (end, now)
        for tp in set(self._since) - set(log_ends):
            del self._since[tp]
        return {tp for tp, (_, since) in self._since.items() if now - since >= self._timeout_s}
