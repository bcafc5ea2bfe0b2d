"""StartSweeps: how many open transactions each query start's sweep aborted, recorded beside the
sink log, so that a process other than the sweeping one (the driver's metrics) can count them.

Invariants enforced here:
- a record is ``_start-sweeps/<at_ms>-<random>.json`` {v, at_ms, aborted} (``timed_records``:
  create-only, the newest ``KEEP`` kept), written only for a sweep that aborted something;
- ``aborted_since(at_ms)`` sums the records written at or after ``at_ms`` and reads no other.
"""
from __future__ import annotations

import logging
import time

from kafka_eos.txn.log.log_store import child, versioned
from kafka_eos.txn.writer.timed_records import read_timed, write_timed

log = logging.getLogger(__name__)
FOLDER = "_start-sweeps"
FORMAT = 1
KEEP = 100


def _folder(log_location: str) -> str:
    return child(log_location, FOLDER)


def record_sweep(log_location: str, aborted: int, at_ms: int | None = None) -> None:
    """Record that the sweep at a query's start aborted ``aborted`` transactions (nothing if 0).
    Never raises: the count is for monitoring, a store that fails is logged."""
    if aborted <= 0:
        return
    at_ms = int(time.time() * 1000) if at_ms is None else at_ms
    try:
        write_timed(_folder(log_location), at_ms, {"v": FORMAT, "at_ms": at_ms, "aborted": aborted}, KEEP)
    except Exception as exc:  # noqa: BLE001 - monitoring only
        log.warning("kafka-eos: the start sweep's count (%d aborted) was not recorded in %s (%r); "
                    "kafka_eos_transactions_aborted_total misses it", aborted, _folder(log_location), exc)


def aborted_since(log_location: str, at_ms: int) -> int:
    """The transactions the query starts recorded at or after ``at_ms`` aborted."""
    return sum(int(versioned(text, f"{FOLDER}/{name}", "start sweep record", FORMAT)["aborted"])
               for _, name, text in read_timed(_folder(log_location), at_ms - 1))
