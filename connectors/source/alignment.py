"""The stream reader's event-time alignment (options ``alignMaxDriftMs``, ``alignIdleTimeoutMs``).

``SourceAligner.plan`` shapes one micro-batch with ``kafka_eos.offsets.alignment.align``, asking
the broker for head records (``kafka_eos.offsets.record_times``, one fetch pass) and for offsets by
timestamp (one ListOffsets call). It keeps in memory, on the driver only:
- which partitions' log ends (last stable offsets) have not moved for the idle timeout; under
  Trigger.AvailableNow a partition that reached its target is idle at once (no more data comes);
- the last head time seen per partition, the time a caught-up, non-idle partition holds the
  others at (a lower bound of its last record's time).
Losing this memory (a restarted driver) changes only how batches are shaped, never which offsets
are read: the planned ends go to Spark's offset log before a batch runs and replays use them.
"""
from __future__ import annotations

import logging
import time
from typing import Mapping

from kafka_eos.offsets.alignment import IdleTracker, align
from kafka_eos.kafka_clients import admin_settings, deadline_s
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.offsets.model import Offsets, TopicPartition, describe
from kafka_eos.offsets.record_times import RecordTimes

log = logging.getLogger(__name__)


class SourceAligner:
    def __init__(self, drift_ms: int, idle_timeout_ms: int, kafka: KafkaOffsets, conf: Mapping[str, str],
                 timeout_s: float = deadline_s("source.head_records")) -> None:
        self.drift_ms = drift_ms
        self._kafka = kafka
        self._times = RecordTimes(admin_settings(conf), timeout_s)
        self._idle = IdleTracker(idle_timeout_ms, time.monotonic)
        self._last: dict[TopicPartition, int] = {}
        self.lookups = {"heads": 0, "polls": 0, "offsets_at": 0}  # broker calls so far, for measurements

    def plan(self, start: Mapping[TopicPartition, int], upper: Mapping[TopicPartition, int],
             log_ends: Mapping[TopicPartition, int], target: Mapping[TopicPartition, int] | None) -> Offsets:
        """Aligned ends in [start, upper] for every partition of ``upper``."""
        idle = self._idle.observe(log_ends)
        if target is not None:
            idle |= {tp for tp in upper if start.get(tp, upper[tp]) >= target.get(tp, upper[tp])}
        caught_up = {tp for tp in upper if start.get(tp, upper[tp]) >= upper[tp]}
        held = {tp: t for tp, t in self._last.items() if tp in caught_up and tp not in idle}
        plan = align(start, upper, self.drift_ms, self._heads, self._offsets_at, held)
        self._last.update({tp: ts for tp, (_, ts) in plan.heads.items()})
        for tp in set(self._last) - set(upper):
            del self._last[tp]
        if plan.slowest is not None:
            log.info("kafka-eos source alignment: slowest %s at %d ms, frontier %s ms, drift %d ms, held by %s",
                     describe(plan.slowest), plan.heads[plan.slowest][1], plan.frontier, self.drift_ms,
                     ", ".join(map(describe, sorted(held))) or "none")
        return plan.ends

    def _heads(self, starts: Mapping[TopicPartition, int]):
        self.lookups["heads"] += 1
        polls = self._times.polls
        try:
            return self._times.heads(starts)
        finally:
            self.lookups["polls"] += self._times.polls - polls

    def _offsets_at(self, times: Mapping[TopicPartition, int]):
        self.lookups["offsets_at"] += 1
        return self._kafka.for_times(times)

    def close(self) -> None:
        self._times.close()
