"""StartSweeps: how many open transactions each query start's sweep aborted, recorded beside the
sink log, so that a process other than the sweeping one (the driver's metrics) can count them.

Invariants enforced here:
- a record is ``_start-sweeps/<at_ms>-<random>.json`` {v, at_ms, aborted}, written create-only
  and only for a sweep that aborted something (its version read by ``log_store.versioned``);
- the newest ``KEEP`` records are kept: writing one deletes the older ones;
- ``aborted_since(at_ms)`` sums the records written at or after ``at_ms`` and reads no other.
"""
from __future__ import annotations

import json
import logging
import re
import time
import uuid

from kafka_eos.txn.log_store import LogReader, LogStore, versioned

log = logging.getLogger(__name__)
FOLDER = "_start-sweeps"
FORMAT = 1
KEEP = 100
_NAME = re.compile(r"^(\d+)-[0-9a-f]+\.json$")


def _folder(log_location: str) -> str:
    return f"{log_location.rstrip('/')}/{FOLDER}"


def record_sweep(log_location: str, aborted: int, at_ms: int | None = None) -> None:
    """Record that the sweep at a query's start aborted ``aborted`` transactions (nothing if 0).
    Never raises: the count is for monitoring, a store that fails is logged."""
    if aborted <= 0:
        return
    at_ms = int(time.time() * 1000) if at_ms is None else at_ms
    try:
        store = LogStore(_folder(log_location))
        store.create(f"{at_ms:015d}-{uuid.uuid4().hex[:8]}.json", json.dumps({"v": FORMAT, "at_ms": at_ms,
                                                                              "aborted": aborted}))
        for old in sorted(n for n in store.names() if _NAME.match(n))[:-KEEP]:
            store.delete(old)
    except Exception as exc:  # noqa: BLE001 - monitoring only
        log.warning("kafka-eos: the start sweep's count (%d aborted) was not recorded in %s (%r); "
                    "kafka_eos_transactions_aborted_total misses it", aborted, _folder(log_location), exc)


def aborted_since(log_location: str, at_ms: int) -> int:
    """The transactions the query starts recorded at or after ``at_ms`` aborted."""
    reader = LogReader(_folder(log_location))
    total = 0
    for name in reader.names():
        match = _NAME.match(name)
        if match is None or int(match[1]) < at_ms:
            continue
        text = reader.read(name)
        if text:
            total += int(versioned(text, f"{FOLDER}/{name}", "start sweep record", FORMAT)["aborted"])
    return total
