"""VerifyRuns: what each ``kafka-eos verify`` found, recorded beside the sink log, so that
``status`` and the driver's metrics (other processes) can show it.

Invariants enforced here:
- a record is ``_verify-runs/<at_ms>-<random>.json`` {v, at_ms, outcomes, newest_verified,
  first_problem}, written create-only (its version read by ``log_store.versioned``);
  ``outcomes`` maps each outcome to the batch ids that had it;
- the newest ``KEEP`` records are kept: writing one deletes the older ones;
- ``runs_since(at_ms)`` reads only the records written after ``at_ms``, oldest first.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass

from kafka_eos.txn.log_store import LogReader, LogStore, versioned

FOLDER = "_verify-runs"
FORMAT = 1
KEEP = 100
_NAME = re.compile(r"^(\d+)-[0-9a-f]+\.json$")


@dataclass(frozen=True)
class VerifyRun:
    at_ms: int
    outcomes: dict[str, list[int]]
    newest_verified: int | None
    first_problem: dict | None

    def count(self, outcome: str) -> int:
        return len(self.outcomes.get(outcome, []))


def _folder(log_location: str) -> str:
    return f"{log_location.rstrip('/')}/{FOLDER}"


def record_run(log_location: str, outcomes: dict[str, list[int]], newest_verified: int | None,
               first_problem: dict | None, at_ms: int | None = None) -> str:
    """Record one verify run; returns the record's name. Raises what the store raises."""
    at_ms = int(time.time() * 1000) if at_ms is None else at_ms
    store = LogStore(_folder(log_location))
    name = f"{at_ms:015d}-{uuid.uuid4().hex[:8]}.json"
    store.create(name, json.dumps({"v": FORMAT, "at_ms": at_ms, "outcomes": outcomes,
                                   "newest_verified": newest_verified, "first_problem": first_problem}))
    for old in sorted(n for n in store.names() if _NAME.match(n))[:-KEEP]:
        store.delete(old)
    return f"{FOLDER}/{name}"


def runs_since(log_location: str, at_ms: int = -1) -> list[VerifyRun]:
    """The runs recorded after ``at_ms``, oldest first."""
    reader = LogReader(_folder(log_location))
    runs = []
    for name in sorted(reader.names()):
        match = _NAME.match(name)
        if match is None or int(match[1]) <= at_ms:
            continue
        text = reader.read(name)
        if text:
            data = versioned(text, f"{FOLDER}/{name}", "verify run record", FORMAT)
            runs.append(VerifyRun(int(data["at_ms"]), {k: list(v) for k, v in data["outcomes"].items()},
                                  data["newest_verified"], data["first_problem"]))
    return runs


def latest_run(log_location: str) -> VerifyRun | None:
    runs = runs_since(log_location)
    return runs[-1] if runs else None
