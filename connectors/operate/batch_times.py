"""A pipeline's recent batches' start and commit times, read from its checkpoint and sink log, and
its stall threshold (``txn.stall``) from them.

    start    ``batchTimestampMs`` of the batch's offset-log entry (Spark's, written as the batch starts)
    commit   ``committed_at_ms`` of the batch's committed sink-log record (exactly-once only)

Invariants:
- Reads only, and only the newest ``stall.WINDOW`` batches of each log; a committed record and an
  offset-log entry never change, so each is read once per ``BatchTimes`` (the probes keep theirs
  between samples: a sample reads only the batches new since the last).
- An at-least-once pipeline (no sink log) has no commit times: its threshold is the floor.
- ``kafka-eos status``, the driver's probe and the monitor's all call ``threshold_s`` here, so
  the alerts and status judge against one value.
"""
from __future__ import annotations

import json

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.txn.sink_log import SinkLogReader
from kafka_eos.txn.stall import WINDOW, batch_durations, stall_threshold_s
from kafka_eos.txn.states import BatchState


def trigger_s(cfg: PipelineConfig) -> float:
    """The pipeline's trigger interval in seconds (0 for availableNow or as fast as possible)."""
    trigger = cfg.checkpoint.trigger
    return 0.0 if trigger.available_now else trigger.interval_ms / 1000


def batch_start_ms(metadata: str) -> float | None:
    """``batchTimestampMs`` of an offset-log metadata line (None when it has none)."""
    try:
        value = json.loads(metadata).get("batchTimestampMs")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


class BatchTimes:
    """``durations()``: the newest batches' seconds from start to commit; ``threshold_s()``: the
    stall threshold of a pipeline with trigger ``trigger_s`` (``sink_log``: None for at-least-once)."""

    def __init__(self, checkpoint: str, sink_log: str | None, trigger: float) -> None:
        self.checkpoint, self.sink_log, self.trigger = CheckpointReader(checkpoint), sink_log, trigger
        self._starts: dict[int, float] = {}
        self._commits: dict[int, float] = {}

    def _read_commits(self) -> list[int]:
        """The newest batches of the sink log; reads the committed ones not read yet."""
        reader = SinkLogReader(self.sink_log or "")
        newest = reader.latest_batch_id()
        if newest is None:
            return []
        batches = list(range(max(0, newest - WINDOW + 1), newest + 1))
        for batch in batches:
            if batch in self._commits:
                continue
            record = reader.get(batch)
            if record is not None and record.state == BatchState.COMMITTED and "committed_at_ms" in record.metrics:
                self._commits[batch] = float(record.metrics["committed_at_ms"])
        return batches

    def durations(self) -> list[float]:
        if self.sink_log is None:
            return []
        batches = self._read_commits()
        for batch in batches:
            if batch in self._commits and batch not in self._starts:
                entry = self.checkpoint.offsets(batch)
                start = batch_start_ms(entry.metadata) if entry is not None else None
                if start is not None:
                    self._starts[batch] = start
        kept = set(batches)
        self._commits = {b: t for b, t in self._commits.items() if b in kept}
        self._starts = {b: t for b, t in self._starts.items() if b in kept}
        return batch_durations(self._starts, self._commits)

    def threshold_s(self) -> float:
        return stall_threshold_s(self.trigger, self.durations())


def for_pipeline(cfg: PipelineConfig) -> BatchTimes:
    """The batch times of ``cfg``: its checkpoint and, exactly-once, its sink log."""
    from kafka_eos.connectors.pipeline.spark_options import sink_options
    from kafka_eos.connectors.sink.options import sink_log_location
    sink_log = sink_log_location(sink_options(cfg)) if cfg.exactly_once else None
    return BatchTimes(cfg.checkpoint.location or "", sink_log, trigger_s(cfg))
