"""The runner's hook that keeps each batch's event times beside the sink log, for savepoints.

    batch's progress (eventTime: min, max, watermark) -> BatchReport -> EventTimeRecorder
        -> txn.log.event_times.record_batch  (<sink log>/_event-times/<batch>.json, create-only)

Invariants:
- Only a stateful pipeline with a watermark records (``records_event_times``): the rewind of a
  savepoint needs them (``offsets.rewind``); a stateless one restarts from its end offsets.
- A batch's record is Spark's progress ``eventTime`` of that batch and its first source's start
  offsets (``event_times.from_progress``, coverage ``watermark_operator``: the rows that reached
  the watermark operator; docs/savepoints.md says which new transforms that covers). A batch
  whose progress has no ``eventTime`` (or that the reporter never saw) has no record: a rewind
  then counts it as unknown and replays more, never less.
- Recording never fails a run: a store error is one warning line (per kind of failure), and the
  batch stays unrecorded (unknown, as above).
- Records are pruned with the sink log's evidence retention: every ``PRUNE_EVERY`` batches, the
  records of batches older than the sink log's oldest kept batch are deleted (a rewind then bounds
  them by the earliest record's watermark, or refuses: ``event_times.prune``).
"""
from __future__ import annotations

import json
from typing import Callable

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.rules import stateful
from kafka_eos.connectors.pipeline.progress import BatchReport, sink_log_location
from kafka_eos.offsets import model
from kafka_eos.offsets.model import Offsets
from kafka_eos.txn.log import event_times
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.sink_log import SinkLogReader

PRUNE_EVERY = 100
# the run's own process writes them: as the runner role of a Kafka record store, which a command
# beside the run (verify, status, savepoint: the operator role) never fences
ROLE = StoreRole.RUNNER


def start_offsets(report: BatchReport) -> Offsets | None:
    """Where the batch started, from its first source's progress: the start batch 0 was planned
    from (recorded on its end: ``offsets.model.planned_start``), else its ``startOffset``."""
    start, end = report.source_offsets
    try:
        planned = model.planned_start(json.loads(end)) if end else None
        return planned if planned is not None else (model.decode(json.loads(start)) if start else None)
    except (ValueError, TypeError, AttributeError, KafkaEosError):  # not kafka-eos's offsets: not recorded
        return None


def records_event_times(cfg: PipelineConfig) -> bool:
    """Whether a run of ``cfg`` records its batches' event times (see module)."""
    return cfg.transform.watermark is not None and stateful(cfg.transform)


class EventTimeRecorder:
    """A ``ProgressReporter`` listener: ``recorder(report)`` records ``report``'s batch."""

    def __init__(self, log_location: str, emit: Callable[[str], None], prune_every: int = PRUNE_EVERY) -> None:
        self.location = log_location
        self.emit = emit
        self.prune_every = prune_every
        self._warned: set[str] = set()

    def __call__(self, report: BatchReport) -> None:
        if not report.event_time:
            return
        times = event_times.from_progress(report.batch_id, report.event_time, start=start_offsets(report))
        try:
            kept, created = event_times.record_batch(self.location, times, ROLE)
            if not created and kept != times:
                self._warn("differs", f"batch {report.batch_id}'s event times {times} differ from its record {kept} "
                                      "(kept: a replayed batch reads the same records)")
            if report.batch_id % self.prune_every == 0:
                self.prune()
        except (OSError, ValueError, KafkaEosError) as exc:
            self._warn(type(exc).__name__, f"batch {report.batch_id}'s event times were not recorded ({exc}); "
                                           "a savepoint replays from before it")

    def prune(self) -> int:
        """Delete the records of batches the sink log no longer keeps; how many."""
        kept = SinkLogReader(self.location).batch_ids()
        return event_times.prune(self.location, kept[0], ROLE) if kept else 0

    def _warn(self, kind: str, text: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            self.emit(f"kafka-eos: warning: {text}")


def recorder_for(cfg: PipelineConfig, emit: Callable[[str], None]) -> list[Callable[[BatchReport], None]]:
    """The listeners the runner adds for ``cfg``: a recorder when it records event times, else none."""
    location = sink_log_location(cfg)
    return [EventTimeRecorder(location, emit)] if records_event_times(cfg) and location else []
