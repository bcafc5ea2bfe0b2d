"""A pipeline's lag behind its source, computed from a committed position and the brokers' answers.

Facts (one ``LagFacts`` per sample, pure functions of what was read):
- per source partition of the committed position: the records between that position (the end of
  the last committed batch) and the partition's read_committed end offset, and the age of the
  oldest unread record (now minus the Kafka timestamp of the first committed record at or after
  the position; 0 when nothing is unread);
- the newest committed batch and when it was committed;
- how long input has waited with no batch committed: since the later of the last commit and
  the first sample that found records behind (0 when none are behind). A healthy pipeline's
  stays within a trigger interval and a batch; a stalled one's grows.

Invariants:
- Lag never depends on a batch completing: it is computed at each sample from the ends read
  then, so a pipeline that stops committing shows its lag growing.
- A partition is reported only when both its position and its end are known; records behind are
  never negative.
- When the commit time is not recorded (an at-least-once pipeline has no sink log), it is the
  time this sampler first saw that batch committed (``CommitClock``): never earlier than the truth.
- The time input has waited counts from this sampler's own samples (``WaitClock``): records that
  arrive after an idle spell wait from when they were first seen, not from the last commit; a
  sampler started during a stall counts from its start (never more than the truth, to within
  one interval).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

TopicPartition = tuple[str, int]
Head = tuple[int, int]           # (offset, Kafka record timestamp in ms) of the first unread record


@dataclass(frozen=True)
class PartitionLag:
    records: int                 # records between the committed position and the read_committed end
    seconds: float               # age of the oldest unread record (0: none unread)


@dataclass(frozen=True)
class LagFacts:
    partitions: dict[TopicPartition, PartitionLag] = field(default_factory=dict)
    committed_batch: int | None = None          # None: no batch committed yet
    last_commit_s: float | None = None          # Unix time of that batch's commit (None: none yet)
    waiting_s: float = 0.0                      # how long records have waited with no batch committed
    error: BaseException | None = None          # the brokers' reads failed: the facts rest on the last ends read
    stall_threshold_s: float | None = None      # input waiting longer than this: stalled (``txn.stall``)


def records_behind(positions: Mapping[TopicPartition, int],
                   ends: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Per partition known both ways: the records between its position and its end (>= 0)."""
    return {tp: max(0, ends[tp] - positions[tp]) for tp in sorted(set(positions) & set(ends))}


def source_lag(positions: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int],
               heads: Mapping[TopicPartition, Head | None], now_ms: int) -> dict[TopicPartition, PartitionLag]:
    """``PartitionLag`` per partition known both ways; ``heads`` holds the first unread record of
    the partitions behind (a partition missing there, or without a record, has age 0)."""
    lag = {}
    for tp, behind in records_behind(positions, ends).items():
        head = heads.get(tp) if behind else None
        seconds = max(0, now_ms - head[1]) / 1000 if head is not None and head[1] >= 0 else 0.0
        lag[tp] = PartitionLag(behind, round(seconds, 3))
    return lag


class CommitClock:
    """When the newest committed batch was committed: the recorded time when there is one, else
    the time this clock first saw that batch committed."""

    def __init__(self) -> None:
        self._seen: tuple[int, float] | None = None   # (batch, first seen at)

    def observe(self, batch: int | None, recorded_s: float | None, now_s: float) -> float | None:
        if batch is None:
            return None
        if self._seen is None or self._seen[0] != batch:
            self._seen = (batch, now_s)
        return recorded_s if recorded_s is not None else self._seen[1]


class WaitClock:
    """How long records have been behind with no batch committed, from samples."""

    def __init__(self) -> None:
        self._since: float | None = None    # the first sample that found records behind, in this spell

    def observe(self, behind: int, last_commit_s: float | None, now_s: float) -> float:
        if behind <= 0:
            self._since = None
            return 0.0
        if self._since is None:
            self._since = now_s
        start = self._since if last_commit_s is None else max(self._since, last_commit_s)
        return round(max(0.0, now_s - start), 3)
