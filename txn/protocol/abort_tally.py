"""AbortTally: the transactions one protocol instance aborted since its last committed batch record.

Enforced here: a count per reason (``REASONS``), never negative; a committed record carries the
counts in its metrics as ``aborted_<reason>`` (``metrics()``) and the tally starts again from zero
once that record is durable (``clear()``), so each abort is reported by exactly one record. What the
instance aborts after its last record (the query's end) is not reported.
"""
from __future__ import annotations

from collections import Counter

REPLAY_DUPLICATE = "replay_duplicate"  # a replay's re-write of a sink partition already durable
LINGERING = "lingering"                # dead attempts' and older runs' open transactions
FAILED_BATCH = "failed_batch"          # a batch the engine gave up on (its tasks' transactions)
REASONS = (REPLAY_DUPLICATE, LINGERING, FAILED_BATCH)
QUERY_START = "query_start"            # the query start's sweep (recorded apart: ``start_sweeps``)
ALL_REASONS = (QUERY_START, *REASONS)  # the metric's labels
PREFIX = "aborted_"


class AbortTally:
    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    def add(self, reason: str, aborted: int) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown abort reason {reason!r}; one of {REASONS}")
        if aborted < 0:
            raise ValueError(f"a count of aborted transactions is never negative ({aborted})")
        self._counts[reason] += aborted

    def metrics(self) -> dict[str, float]:
        """``aborted_<reason>`` for every reason (0 included), for a record's metrics."""
        return {PREFIX + reason: float(self._counts[reason]) for reason in REASONS}

    def clear(self) -> None:
        self._counts.clear()


def aborted_in(metrics: dict[str, float]) -> dict[str, int]:
    """The counts a record's metrics carry, by reason (a record written before the tally: none)."""
    return {reason: int(metrics.get(PREFIX + reason, 0)) for reason in REASONS}
