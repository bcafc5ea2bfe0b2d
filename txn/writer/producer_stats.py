"""librdkafka statistics as the sink's tasks read them: the newest statistics JSON
(``LatestStats``), the first statistics after a moment (``next_stats``), the records written per
partition (``records_per_partition``), and the at-least-once producer's start (``await_producer_id``).

Why ``await_producer_id`` (issue 27): an idempotent producer without transactions cannot send
before it has a producer id, and librdkafka asks for one only when a metadata response arrives
or its PID timer fires, every 500 ms. The first metadata response arrives while librdkafka swaps
the bootstrap connection for the broker's own, so that request finds no broker up and the next
try waits for the timer: every at-least-once task waited about 510 ms before its first record
went out (bench/README.md). A transactional producer is not affected: its coordinator lookup
asks again as soon as the coordinator is up.
"""
from __future__ import annotations

import json
import time
from typing import Any

# Pre-commit waits for the next statistics after flush: half of this on average. 10 ms, not 50:
# the wait was 31 ms of each task's pre-commit at small batches, 14 ms now (bench/README.md).
STATS_INTERVAL_MS = 10
PRODUCER_ID_WAIT_S = 2.0  # at most this long asking for metadata until the producer id is assigned


class LatestStats:
    """librdkafka's ``stats_cb``: keeps only the newest statistics JSON and how many came."""

    def __init__(self) -> None:
        self.count, self.latest = 0, ""

    def __call__(self, stats_json: str) -> None:
        self.count, self.latest = self.count + 1, stats_json


def next_stats(producer: Any, stats: LatestStats, wait_s: float) -> str:
    """The first statistics JSON served after this call (within ``wait_s``), else the newest."""
    seen, deadline = stats.count, time.monotonic() + wait_s
    while stats.count == seen and time.monotonic() < deadline:
        producer.poll(0.005)
    return stats.latest


def producer_id_assigned(stats_json: str) -> bool:
    """True when librdkafka's statistics show the idempotent producer's id assigned."""
    return bool(stats_json) and json.loads(stats_json).get("eos", {}).get("idemp_state") == "Assigned"


def await_producer_id(producer: Any, stats: LatestStats, topic: str | None,
                      wait_s: float = PRODUCER_ID_WAIT_S) -> bool:
    """Ask for ``topic``'s metadata until the statistics show the producer id assigned (each
    metadata response makes librdkafka request the id again, now from a connected broker), at
    most ``wait_s``. Best effort: True once assigned; False on a timeout or a failed request,
    which the task's flush then reports if it matters."""
    if not topic:  # no metadata request for all topics; the write fails on the missing topic anyway
        return False
    deadline = time.monotonic() + wait_s
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            producer.list_topics(topic, timeout=remaining)
        except Exception:  # noqa: BLE001 - best effort: the flush deadline owns failures
            return False
        if producer_id_assigned(next_stats(producer, stats, max(0.0, deadline - time.monotonic()))):
            return True
    return False


def records_per_partition(stats: dict) -> dict[str, dict[str, int]]:
    """topic -> partition -> records this producer wrote, from librdkafka statistics: ``msgs``
    (messages produced to the partition), not ``txmsgs``, which counts every transmission and so
    counts a retried produce request twice."""
    return {topic: {p: info["msgs"] for p, info in t.get("partitions", {}).items() if p != "-1" and info.get("msgs")}
            for topic, t in stats.get("topics", {}).items()}
