"""VerifyRuns: what each ``kafka-eos verify`` found, recorded beside the sink log, so that
``status`` and the driver's metrics (other processes) can show it.

Invariants enforced here:
- a record is ``_verify-runs/<at_ms>-<random>.json`` {v, at_ms, outcomes, newest_verified,
  first_problem} (``timed_records``: create-only, the newest ``KEEP`` kept, its version read by
  ``log_store.versioned``); ``outcomes`` maps each outcome to the batch ids that had it;
- ``runs_since(at_ms)`` reads only the records written after ``at_ms``, oldest first.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from kafka_eos.txn.log.log_store import child, versioned
from kafka_eos.txn.writer.timed_records import read_timed, write_timed

FOLDER = "_verify-runs"
FORMAT = 1
KEEP = 100


@dataclass(frozen=True)
class VerifyRun:
    at_ms: int
    outcomes: dict[str, list[int]]
    newest_verified: int | None
    first_problem: dict | None

    def count(self, outcome: str) -> int:
        return len(self.outcomes.get(outcome, []))


def _folder(log_location: str) -> str:
    return child(log_location, FOLDER)


def record_run(log_location: str, outcomes: dict[str, list[int]], newest_verified: int | None,
               first_problem: dict | None, at_ms: int | None = None) -> str:
    """Record one verify run; returns the record's name. Raises what the store raises."""
    at_ms = int(time.time() * 1000) if at_ms is None else at_ms
    name = write_timed(_folder(log_location), at_ms, {"v": FORMAT, "at_ms": at_ms, "outcomes": outcomes,
                                                      "newest_verified": newest_verified,
                                                      "first_problem": first_problem}, KEEP)
    return f"{FOLDER}/{name}"


def runs_since(log_location: str, at_ms: int = -1) -> list[VerifyRun]:
    """The runs recorded after ``at_ms``, oldest first."""
    runs = []
    for _, name, text in read_timed(_folder(log_location), at_ms):
        data = versioned(text, f"{FOLDER}/{name}", "verify run record", FORMAT)
        runs.append(VerifyRun(int(data["at_ms"]), {k: list(v) for k, v in data["outcomes"].items()},
                              data["newest_verified"], data["first_problem"]))
    return runs


def latest_run(log_location: str) -> VerifyRun | None:
    runs = runs_since(log_location)
    return runs[-1] if runs else None
