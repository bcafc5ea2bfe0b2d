"""The input, queries and output check of the large-state cell (``bench.large_state``); pure Python.

Input (one topic per key count, written once): ``K`` JSON events ``{"id", "key", "at"}``, record
``i`` of key ``k<(i * STRIDE) % K>`` (STRIDE is prime and coprime with K: every key exactly once),
event times rising over ``SPAN_MS`` from ``T0 + LEAD_MS`` (+-2 s out of order), then the first
``K // DUP_EVERY`` records again, identical (same id, key and time): ``K`` distinct keys,
``K + K // DUP_EVERY`` records. Every event is inside the 10-minute window starting at ``T0``.

Queries (the same SQL for kafka-eos and for Spark's own Kafka source and sink):
- ``windowed``: a keyed count in 10-minute tumbling windows, watermark 30 s: the state holds all
  K keys of the one open window until a record far later (``CLOSE_AT``) moves the watermark past it;
  the output is every key once with its count (2 for the repeated records' keys, else 1).
- ``dedup``: ``SELECT DISTINCT`` over the key and the event time, watermark 10 minutes: every key
  held in the state (nothing is older than the watermark). Spark plans SQL's DISTINCT as an
  aggregation keyed by the event time, so in append mode a row is emitted once the watermark
  passes it: after ``CLOSE``, like the window.
Every run adds the record ``TAIL`` (key ``tail``, inside the window) before its restart, so both
outputs also hold ``tail`` once (count 1); ``CLOSE`` (its own window or row stays open) is never
emitted.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a 10-minute boundary
LEAD_MS, SPAN_MS, JITTER_MS = 60_000, 240_000, 2_000
WINDOW_MS = 600_000
STRIDE = 7919
DUP_EVERY = 8
TAIL = ("tail", T0 + 300_000)
CLOSE = ("close", T0 + 3_600_000)  # moves the watermark past the window: it emits
SCHEMA = {"type": "record", "name": "Event", "fields": [
    {"name": "id", "type": "long"}, {"name": "key", "type": "string"}, {"name": "at", "type": "long"}]}
WINDOWED_SQL = ("SELECT value.key AS key, named_struct('key', value.key, 'start_ms', unix_millis(window.start), "
                "'n', COUNT(*)) AS value FROM source GROUP BY window(event_time, '10 minutes'), value.key")
DEDUP_SQL = ("SELECT key, named_struct('key', key, 'at', at) AS value FROM "
             "(SELECT DISTINCT value.key AS key, value.at AS at, event_time FROM source)")


@dataclass(frozen=True)
class Query:
    name: str
    sql: str
    delay: str
    savepoints: bool  # kafka-eos savepoints refuse deduplication (docs/savepoints.md): not measured


QUERIES = {"windowed": Query("windowed", WINDOWED_SQL, "30 seconds", True),
           "dedup": Query("dedup", DEDUP_SQL, "10 minutes", False)}


def records(keys: int) -> int:
    return keys + keys // DUP_EVERY


def event(i: int, keys: int) -> tuple[int, str, int]:
    """(id, key, event time) of record ``i`` of the input of ``keys`` keys."""
    j = i if i < keys else i - keys  # the repeated records are the first ones again
    return j, f"k{(j * STRIDE) % keys}", T0 + LEAD_MS + j * SPAN_MS // keys + (j * 31) % (2 * JITTER_MS) - JITTER_MS


def payload(i: int, key: str, at: int) -> bytes:
    return json.dumps({"id": i, "key": key, "at": at}).encode()


def expected_count(index: int, keys: int) -> int:
    """The windowed count of key ``k<index>``: 2 when its record is among the repeated ones."""
    first = index * pow(STRIDE, -1, keys) % keys  # the record i with (i * STRIDE) % keys == index
    return 2 if first < keys // DUP_EVERY else 1


@dataclass
class OutputCheck:
    """Reads a query's output rows one by one (bounded memory: a byte per key) and says whether it is
    exact: every key once (windowed: in the window at ``T0`` with its count), ``tail`` once, nothing else."""
    query: str
    keys: int
    seen: bytearray = field(init=False)
    rows: int = 0
    twice: int = 0
    wrong: int = 0
    unknown: int = 0
    tail: int = 0

    def __post_init__(self) -> None:
        self.seen = bytearray(self.keys)

    def add(self, value: dict) -> None:
        self.rows += 1
        key = value.get("key", "")
        if key == TAIL[0]:
            self.tail += 1
            self.wrong += self.query == "windowed" and (value.get("n") != 1 or value.get("start_ms") != T0)
            return
        index = int(key[1:]) if key[:1] == "k" and key[1:].isdigit() else -1
        if not 0 <= index < self.keys:
            self.unknown += 1
            return
        if self.seen[index]:
            self.twice += 1
        self.seen[index] = 1
        if self.query == "windowed":
            self.wrong += value.get("start_ms") != T0 or value.get("n") != expected_count(index, self.keys)

    def result(self) -> dict:
        missing = self.keys - sum(self.seen)
        exact = not (missing or self.twice or self.wrong or self.unknown) and self.tail == 1
        return {"rows": self.rows, "missing": missing, "twice": self.twice, "wrong": self.wrong,
                "unknown": self.unknown, "tail": self.tail, "exact": exact}


def batch_figures(batches: list[tuple[int, int]]) -> dict:
    """From (rows, ms) per batch: the rate of the batches with rows after the first (``bench.method``'s
    steady state), their p50 / p95 (ms), and the batches and rows in all."""
    full = [(rows, ms) for rows, ms in batches if rows]
    steady = full[1:] or full
    ms = [m for _, m in steady]
    rate = round(sum(r for r, _ in steady) / (sum(ms) / 1000)) if ms and sum(ms) else None
    p95 = statistics.quantiles(ms, n=20, method="inclusive")[-1] if len(ms) > 1 else (ms[0] if ms else None)
    return {"records_per_s": rate, "batch_p50_ms": round(statistics.median(ms)) if ms else None,
            "batch_p95_ms": None if p95 is None else round(p95), "batches": len(batches),
            "rows_read": sum(r for r, _ in batches)}
