"""The reads behind a pipeline's lag: its committed position, its last commit time and the source's ends.

    position      the end offsets of the checkpoint's last committed batch (Spark's offset and
                  commit logs, through ``CheckpointReader``)
    commit time   ``committed_at_ms`` of the sink log's newest committed record (exactly-once)
    ends, heads   the source's read_committed end offsets and first unread records, read from the
                  brokers at each sample (``KafkaOffsets.latest``, ``RecordTimes.heads``)
    threshold     the stall threshold from the recent batches' durations (``batch_times``)

Invariants:
- Reads only: looking at the checkpoint and the sink log creates nothing; the consumer that reads
  the first unread records commits nothing and belongs to no group of the pipeline's.
- The ends are read on the sampler's timer, never taken from a batch's planning; ``lag.source_lag``
  turns them into facts.
- A sample whose ends or first unread records cannot be read (``KafkaLookupError``: a partition's
  leader hung or down) still answers, from the ends last read: an end offset never goes back, so
  ``last end - position`` is a lower bound of what waits, and a pipeline stalled behind a hung
  source leader shows its input waiting; the facts carry the error (the probe counts it as failed).
"""
from __future__ import annotations

import functools
import json
import time
from typing import Callable, Mapping

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.operate.batch_times import BatchTimes
from kafka_eos.connectors.operate.batch_times import for_pipeline as batch_times
from kafka_eos.connectors.operate.lag import (CommitClock, Head, LagFacts, TopicPartition, WaitClock, records_behind,
                                              source_lag)
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.spark_options import sink_options, source_options
from kafka_eos.connectors.sink.options import sink_log_location
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.offsets import model
from kafka_eos.offsets.kafka_offsets import KafkaLookupError, KafkaOffsets
from kafka_eos.offsets.record_times import RecordTimes
from kafka_eos.txn.log.sink_log import SinkLogReader
from kafka_eos.txn.protocol.states import BatchState

Ends = Callable[[set[TopicPartition]], Mapping[TopicPartition, int]]
Heads = Callable[[Mapping[TopicPartition, int]], Mapping[TopicPartition, Head | None]]
NEWEST_RECORDS = 3   # sink-log records looked at for the newest commit (a decided batch may be newer)


def committed_position(checkpoint: str) -> tuple[int, dict[TopicPartition, int]] | None:
    """(the last committed batch, its end offsets) of the checkpoint; None before any commit or
    when its source line is not a kafka-eos one."""
    reader = CheckpointReader(checkpoint)
    committed = reader.commit_batches()
    entry = reader.offsets(committed[-1]) if committed else None
    if entry is None or not entry.sources:
        return None
    try:
        return entry.batch_id, model.decode(json.loads(entry.sources[-1]))
    except ValueError:  # not a kafka-eos source line (OffsetFormatError is a ValueError)
        return None


def last_commit_s(sink_log: str) -> float | None:
    """Unix time of the newest commit the sink log records (None: none among its newest records)."""
    reader = SinkLogReader(sink_log)
    for batch_id in reversed(reader.batch_ids()[-NEWEST_RECORDS:]):
        record = reader.get(batch_id)
        if record is not None and record.state == BatchState.COMMITTED and "committed_at_ms" in record.metrics:
            return float(record.metrics["committed_at_ms"]) / 1000
    return None


class LagSampler:
    """``sample()`` -> ``LagFacts`` of one pipeline (``sink_log``: None for at-least-once)."""

    def __init__(self, checkpoint: str, sink_log: str | None, ends: Ends, heads: Heads,
                 clock: Callable[[], float] = time.time, close: Callable[[], None] | None = None,
                 times: BatchTimes | None = None) -> None:
        self.checkpoint, self.sink_log, self.times = checkpoint, sink_log, times
        self.ends, self.heads, self.clock, self._close = ends, heads, clock, close
        self.commits, self.waits = CommitClock(), WaitClock()
        self._ends: dict[TopicPartition, int] = {}          # the ends last read
        self._heads: dict[TopicPartition, Head | None] = {}  # the first unread records last read

    def sample(self) -> LagFacts:
        threshold = self.times.threshold_s() if self.times is not None else None
        position = committed_position(self.checkpoint)
        if position is None:
            return LagFacts(stall_threshold_s=threshold)
        error = self._read_brokers(position[1])
        # the commit and the position read after the brokers' answers, which may take their timeout
        # (a broker down): a batch committed meanwhile is not taken for input waiting that long
        recorded = last_commit_s(self.sink_log) if self.sink_log else None
        batch, positions = committed_position(self.checkpoint) or position
        ends = {tp: end for tp, end in self._ends.items() if tp in positions}
        behind = {tp: positions[tp] for tp, n in records_behind(positions, ends).items() if n > 0}
        heads = {tp: h for tp, h in self._heads.items() if tp in behind and (h is None or h[0] >= behind[tp])}
        now = self.clock()
        lag = source_lag(positions, ends, heads, int(now * 1000))
        committed_s = self.commits.observe(batch, recorded, now)
        waiting = self.waits.observe(sum(p.records for p in lag.values()), committed_s, now)
        return LagFacts(lag, batch, committed_s, waiting, error, threshold)

    def _read_brokers(self, positions: Mapping[TopicPartition, int]) -> KafkaLookupError | None:
        """Reads the ends and the first unread records into those last read; the lookup's error, if any."""
        error: KafkaLookupError | None = None
        try:
            self._ends.update(self.ends(set(positions)))
        except KafkaLookupError as exc:
            error = exc
        ends = {tp: end for tp, end in self._ends.items() if tp in positions}
        behind = {tp: positions[tp] for tp, n in records_behind(positions, ends).items() if n > 0}
        if behind and error is None:
            try:
                self._heads = dict(self.heads(behind))
            except KafkaLookupError as exc:
                error = exc
        return error

    def close(self) -> None:
        if self._close is not None:
            self._close()


def for_pipeline(cfg: PipelineConfig, timeout_s: float = 10.0) -> LagSampler:
    """The lag sampler of ``cfg``: its checkpoint, its sink log (exactly-once) and its source cluster."""
    options = parse_source_options(source_options(cfg), streaming=True)
    conf = options.admin_conf()
    offsets = functools.cache(lambda: KafkaOffsets(conf, timeout_s))   # made at the first lookup
    times = RecordTimes(conf, timeout_s)                                # its consumer, too
    sink_log = sink_log_location(sink_options(cfg)) if cfg.exactly_once else None
    return LagSampler(cfg.checkpoint.location or "", sink_log, lambda tps: offsets().latest(tps), times.heads,
                      close=times.close, times=batch_times(cfg))
