"""When a pipeline has stalled: its stall threshold, from its trigger and its own recent batches (pure).

    threshold = trigger interval + max(FLOOR_S, FACTOR x expected)
    expected  = the QUANTILE of the last WINDOW batches' durations
                + the records of the batch planned and not committed yet beyond the QUANTILE of
                  theirs / the QUANTILE of their rates

A batch's duration runs from its start (Spark's batch timestamp in the offset log) to its commit
(``committed_at_ms`` of its sink-log record); its records are its offset ranges' sizes, its rate
records per second. A running pipeline with input waiting commits at least once per trigger
interval plus a batch; one whose input has waited longer than the threshold with no batch
committed has stopped (its driver dead, frozen or cut off, or a broker it needs not answering).
``KafkaEosNoBatchCommitted``, ``KafkaEosOutputHeldBack`` and ``kafka-eos status`` all judge against
this one value, exported as ``kafka_eos_stall_threshold_seconds``.

Invariants:
- The threshold is never below the trigger interval + ``FLOOR_S``: a pipeline whose batches take
  0.5 s still has 30 s to ride out a broker's failover (its leaders and transaction coordinators
  moving) before it pages; a pipeline whose batches take 20 s gets 3 x 20 s.
- A batch planned larger than usual (a backlog read at once) is given the time its size needs at
  the pipeline's own rate: a batch's duration is at most a fixed part (bounded by the slow
  batch) plus its records at the engine's rate, which is at least the rates seen, so
  ``expected`` bounds it from above; 3 x that passes before it counts as a stall.
- One slow batch alone never sets it (``quantile``): a query's first batch (its start and the
  engine's warm-up) or a restart's replay of a batch planned before the outage (its start is
  Spark's, kept from the planning run) is left out; with one batch known, the floor holds.
- Only batches with both times count, newest ``WINDOW`` of them; a duration is never negative
  (clocks of two hosts). With none known (no batch committed yet, an at-least-once sink with no
  sink log), the threshold is the trigger interval + ``FLOOR_S``.
- ``batch_margin_ms`` plays no part: it orders ``transaction.timeout.ms`` (``txn.timeouts``),
  the slowest batch plus a driver restart, which is far longer than "this pipeline has stopped".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

FLOOR_S = 30.0     # the least a batch is allowed beyond its trigger (a broker failover, a slow first batch)
FACTOR = 3.0       # times the pipeline's own slow batch
QUANTILE = 0.95    # its slow batch: this quantile of the recent durations (nearest rank)
WINDOW = 50        # recent batches looked at


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by the nearest rank rounded down (0 for fewer than two):
    never the largest alone, so one batch (a query's first, with its start and warm-up; a
    restart's replay whose start was before the outage) never sets it."""
    rank = math.floor(q * len(values))
    return sorted(values)[rank - 1] if rank >= 1 else 0.0


@dataclass(frozen=True)
class Batch:
    duration_s: float     # start to commit
    records: int = 0      # its offset ranges' sizes (0: not known)


def expected_s(batches: Sequence[Batch], planned_records: int = 0) -> float:
    """An upper bound of how long the planned batch takes, from the recent ``batches``: their slow
    batch, plus the records it has beyond their usual size at their rate (a batch of the usual size
    gets no more: the slow batch covers it, and rates of small batches, made mostly of a batch's
    fixed cost, would overstate it many times)."""
    recent = list(batches)[-WINDOW:]
    slow = quantile([b.duration_s for b in recent], QUANTILE)
    rates = [b.records / b.duration_s for b in recent if b.records > 0 and b.duration_s > 0]
    beyond = planned_records - quantile([float(b.records) for b in recent], QUANTILE)
    rate = quantile(rates, QUANTILE)
    return slow + beyond / rate if beyond > 0 and rate > 0 else slow


def stall_threshold_s(trigger_s: float, batches: Sequence[Batch], planned_records: int = 0) -> float:
    """Seconds of input waiting with no batch committed after which the pipeline has stalled."""
    return round(trigger_s + max(FLOOR_S, FACTOR * expected_s(batches, planned_records)), 3)


def recent_batches(starts_ms: Mapping[int, float], commits_ms: Mapping[int, float],
                   records: Mapping[int, int]) -> list[Batch]:
    """Each batch known both ways (start, commit), oldest first, the newest ``WINDOW``."""
    both = sorted(set(starts_ms) & set(commits_ms))[-WINDOW:]
    return [Batch(round(max(0.0, commits_ms[b] - starts_ms[b]) / 1000, 3), records.get(b, 0)) for b in both]


STALLED_RESAMPLE_S = 5.0   # how often a probe that found a stall samples, to see its end soon


def next_sample_in_s(waiting_s: float, threshold_s: float, interval_s: float) -> float:
    """When a lag probe samples next: at its interval, but no later than the moment input that waits
    crosses the threshold (so a stall is seen when it begins, not up to an interval later), and
    every ``STALLED_RESAMPLE_S`` while stalled (so its end is seen soon)."""
    if waiting_s <= 0:
        return interval_s
    if waiting_s > threshold_s:
        return min(interval_s, STALLED_RESAMPLE_S)
    return min(interval_s, max(1.0, threshold_s - waiting_s + 0.5))
