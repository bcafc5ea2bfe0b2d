"""A pipeline's recent batches (start, commit, records) and the batch it has planned and not
committed yet, read from its checkpoint and sink log, and its stall threshold (``txn.stall``) from them.

    start     ``batchTimestampMs`` of the batch's offset-log entry (Spark's, written as the batch starts)
    records   its end offsets less the previous batch's, summed over the partitions of both
    commit    ``committed_at_ms`` of the batch's committed sink-log record (exactly-once only)
    planned   the newest offset-log batch when it is newer than the sink log's newest committed one

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
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, OffsetEntry
from kafka_eos.offsets import model
from kafka_eos.txn.log.sink_log import SinkLogReader
from kafka_eos.txn.log.stall import WINDOW, Batch, recent_batches, stall_threshold_s
from kafka_eos.txn.protocol.states import BatchState


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


def batch_ends(entry: OffsetEntry | None) -> dict[tuple[str, int], int] | None:
    """The end offsets of a kafka-eos source line of ``entry`` (None: none, or not kafka-eos')."""
    if entry is None or not entry.sources:
        return None
    try:
        return model.decode(json.loads(entry.sources[-1]))
    except ValueError:  # OffsetFormatError is a ValueError
        return None


def records_between(before: dict[tuple[str, int], int] | None, after: dict[tuple[str, int], int] | None) -> int:
    """Records from ``before``'s ends to ``after``'s, over the partitions of both (0: unknown)."""
    if before is None or after is None:
        return 0
    return sum(max(0, after[tp] - before[tp]) for tp in set(before) & set(after))


class BatchTimes:
    """``threshold_s()``: the stall threshold of the pipeline checkpointed at ``checkpoint`` with
    trigger ``trigger`` seconds (``sink_log``: None for at-least-once)."""

    def __init__(self, checkpoint: str, sink_log: str | None, trigger: float) -> None:
        self.checkpoint, self.sink_log, self.trigger = CheckpointReader(checkpoint), sink_log, trigger
        self._entries: dict[int, tuple[float | None, dict[tuple[str, int], int] | None]] = {}
        self._commits: dict[int, float] = {}

    def _entry(self, batch: int) -> tuple[float | None, dict[tuple[str, int], int] | None]:
        """(start, ends) of an offset-log batch, read once."""
        if batch not in self._entries:
            entry = self.checkpoint.offsets(batch)
            self._entries[batch] = (batch_start_ms(entry.metadata) if entry else None, batch_ends(entry))
        return self._entries[batch]

    def _newest_commits(self) -> list[int]:
        """The newest batches of the sink log; reads the committed ones not read yet."""
        reader = SinkLogReader(self.sink_log or "")
        newest = reader.latest_batch_id()
        if newest is None:
            return []
        batches = list(range(max(0, newest - WINDOW + 1), newest + 1))
        for batch in batches:
            if batch not in self._commits:
                record = reader.get(batch)
                if record is not None and record.state == BatchState.COMMITTED and "committed_at_ms" in record.metrics:
                    self._commits[batch] = float(record.metrics["committed_at_ms"])
        return batches

    def _records(self, batch: int) -> int:
        return records_between(self._entry(batch - 1)[1], self._entry(batch)[1]) if batch > 0 else 0

    def recent(self) -> tuple[list[Batch], int]:
        """(the recent committed batches, the records of the batch planned and not committed yet)."""
        if self.sink_log is None:
            return [], 0
        batches = self._newest_commits()
        committed = [b for b in batches if b in self._commits]
        starts = {b: start for b in committed if (start := self._entry(b)[0]) is not None}
        records = {b: self._records(b) for b in starts}
        planned = self.checkpoint.offset_batches()
        newest = planned[-1] if planned else None
        waiting = self._records(newest) if newest is not None and newest > max(committed, default=-1) else 0
        kept = set(batches) | {b - 1 for b in batches} | ({newest, newest - 1} if newest is not None else set())
        self._commits = {b: t for b, t in self._commits.items() if b in kept}
        self._entries = {b: e for b, e in self._entries.items() if b in kept}
        return recent_batches(starts, self._commits, records), waiting

    def threshold_s(self) -> float:
        batches, planned = self.recent()
        return stall_threshold_s(self.trigger, batches, planned)


def for_pipeline(cfg: PipelineConfig) -> BatchTimes:
    """The batch times of ``cfg``: its checkpoint and, exactly-once, its sink log."""
    from kafka_eos.connectors.pipeline.spark_options import sink_options
    from kafka_eos.connectors.sink.options import sink_log_location
    sink_log = sink_log_location(sink_options(cfg)) if cfg.exactly_once else None
    return BatchTimes(cfg.checkpoint.location or "", sink_log, trigger_s(cfg))
