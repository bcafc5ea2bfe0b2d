"""librdkafka statistics as the sink's pre-commit reads them: the newest statistics JSON
(``LatestStats``) and the records written per partition (``records_per_partition``)."""
from __future__ import annotations

# Pre-commit waits for the next statistics after flush: half of this on average. 10 ms, not 50:
# the wait was 31 ms of each task's pre-commit at small batches, 14 ms now (bench/README.md).
STATS_INTERVAL_MS = 10


class LatestStats:
    """librdkafka's ``stats_cb``: keeps only the newest statistics JSON and how many came."""

    def __init__(self) -> None:
        self.count, self.latest = 0, ""

    def __call__(self, stats_json: str) -> None:
        self.count, self.latest = self.count + 1, stats_json


def records_per_partition(stats: dict) -> dict[str, dict[str, int]]:
    """topic -> partition -> records this producer wrote, from librdkafka statistics: ``msgs``
    (messages produced to the partition), not ``txmsgs``, which counts every transmission and so
    counts a retried produce request twice."""
    return {topic: {p: info["msgs"] for p, info in t.get("partitions", {}).items() if p != "-1" and info.get("msgs")}
            for topic, t in stats.get("topics", {}).items()}
