"""RerunWorker: the sampled re-runs of ``verify --follow --recompute``, in a thread of their own.

Invariants:
- The follower's rounds never wait for Spark: a sampled batch that passed its read-side check is
  handed over with its records as sets (read while they were fresh), and judged again here by
  ``txn.recompute_audit`` once its re-run is done; batches are re-run in the order handed over.
- The re-run's session is started (``warm``) as soon as the worker starts, not on the first
  sampled batch, so its start is paid once, beside the rounds.
- Each result goes to ``done`` (the follower records it); a re-run that raises is reported and
  the batch is judged ``cannot be verified`` with the reason, never passed.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from kafka_eos.txn.audit.output_audit import UNVERIFIABLE, BatchVerdict, PartitionScan
from kafka_eos.txn.audit.recompute_audit import judge_recomputed

_STOP = None


@dataclass
class Rerun:
    verdict: BatchVerdict
    handles: list
    scans: dict[tuple[str, int], PartitionScan]


class RerunWorker:
    def __init__(self, recompute: Callable[[list[int]], Any], done: Callable[[BatchVerdict], None],
                 progress: Callable[[str], None] = lambda line: None) -> None:
        self.recompute, self.done, self.progress = recompute, done, progress
        self._queue: queue.Queue[Rerun | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="kafka-eos-follow-rerun", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        return self._queue.qsize()

    def submit(self, rerun: Rerun) -> None:
        self._queue.put(rerun)

    def _loop(self) -> None:
        warm = getattr(self.recompute, "warm", None)
        if warm is not None:
            began = time.monotonic()
            try:
                warm()
                self.progress(f"the re-runs' Spark session is ready ({time.monotonic() - began:.1f} s)")
            except Exception as exc:  # noqa: BLE001 - each re-run then reports it
                self.progress(f"the re-runs' Spark session did not start ({exc})")
        while (item := self._queue.get()) is not _STOP:
            self._one(item)

    def _one(self, item: Rerun) -> None:
        batch_id, began = item.verdict.batch_id, time.monotonic()
        try:
            again = self.recompute([batch_id])
            judge_recomputed(item.verdict, item.handles, item.scans, again.sets.get(batch_id),
                             again.missing.get(batch_id, ""), again.compacted_inputs)
        except Exception as exc:  # noqa: BLE001 - named in the verdict
            item.verdict.fail(UNVERIFIABLE, "-", -1, -1, f"its re-run failed: {str(exc).splitlines()[0] if str(exc) else exc!r}")
        self.progress(f"batch {batch_id}: re-run {item.verdict.outcome} ({item.verdict.recomputed or 0:,} records "
                      f"recomputed in {time.monotonic() - began:.1f} s; {self.waiting} waiting)")
        for problem in item.verdict.problems:
            self.progress(f"batch {batch_id}: {item.verdict.outcome}: {problem}")
        self.done(item.verdict)

    def close(self, timeout_s: float = 120.0) -> None:
        """Stop after the re-run in progress (the ones waiting are dropped)."""
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._queue.put(_STOP)
        self._thread.join(timeout_s)
