"""One progress line per micro-batch on the driver: Spark's progress joined with the sink log.

    kafka-eos orders-json batch 3: 10000 in, 9998 out, 2 to DLQ, 2 transactions, batch 2310 ms,
    pre-commit max 480 ms, commit 35 ms

Invariants:
- A line is printed once per batch that ran (progress with ``addBatch``), in batch order; idle
  triggers (no batch ran) print nothing.
- Records read are Spark's input rows, except for a pipeline whose rows are offset ranges
  (``builder.passes_through``): there they are the records the sink log says were written.
- Counts of records written come from the sink log (the batch's record ``metrics`` and the
  per-topic counts of its handles), which the sink writes before Spark reports the batch; when a
  batch has no sink record (nothing to commit) the line shows Spark's numbers only.
- Lines go through the redactor: they hold names only, but the pipeline name is user text.
- The reporter polls ``query.recentProgress`` (no listener callback server is needed, so it
  works the same in-process and under spark-submit).
- Each batch's numbers are also handed, as one ``BatchReport``, to the reporter's listeners
  (metrics); the line and the listeners read the same report. Lag is not a batch's number: the
  probes read it from the brokers on a timer (``connectors/operate/lag_sampler``).
- A source's start and end offsets are JSON text, or None (``offset_json``: pyspark 4.0/4.1 hand
  them as a Python repr).
- It creates nothing: the sink log is only read, through ``SinkLogReader``, at the location the
  sink itself derives from its options (``sinkLogLocation``, else ``txn.sink_log.location_for``
  of the checkpoint).
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Callable

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.redact import Redactor
from kafka_eos.connectors.pipeline.builder import passes_through, scans_per_batch
from kafka_eos.connectors.pipeline.spark_options import late_topic, sink_options
from kafka_eos.connectors.sink.options import sink_log_location as sink_options_log_location
from kafka_eos.txn.protocol.abort_tally import QUERY_START, aborted_in
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLogReader
from kafka_eos.txn.log.start_sweeps import aborted_since


def sink_log_location(cfg: PipelineConfig) -> str:
    """Where the pipeline's sink keeps its log: what the sink derives from the options it is given."""
    return sink_options_log_location(sink_options(cfg))


def topic_counts(record: BatchRecord) -> dict[str, int]:
    counts: dict[str, int] = {}
    for handle in record.handles:
        for topic, partitions in handle.partitions.items():
            counts[topic] = counts.get(topic, 0) + sum(partitions.values())
    return counts


def records_read(progress, scans: int) -> int:
    """Records the batch read. Spark counts the rows of every source scan (``scans_per_batch``:
    2 with a DLQ), so each record is counted once per scan."""
    return progress.numInputRows // scans


@dataclass(frozen=True)
class BatchReport:
    """One batch that ran: what it read, wrote (None: nothing committed) and how long it took."""
    batch_id: int
    read: int
    written: int | None
    dlq: int
    skipped: int
    duration_ms: int
    late: int = 0       # records committed to the late topic
    dropped: int = 0    # rows Spark's stateful operators dropped as late (no late topic)
    transactions: int = 0        # the sink log's record of a committed batch: transactions committed,
    precommit_ms: float = 0.0    # its slowest pre-commit,
    commit_ms: float = 0.0       # and its EndTxn round (decision to committed)
    aborted: dict[str, int] = field(default_factory=dict)  # transactions aborted since the record before, by reason
    event_time: dict[str, str] = field(default_factory=dict)  # Spark's progress eventTime (min, max, watermark)
    source_offsets: tuple[str | None, str | None] = (None, None)  # the first source's startOffset, endOffset (JSON)


def dropped_by_watermark(progress) -> int:
    """Rows Spark's stateful operators dropped as behind the watermark in this batch (Spark counts
    them after partial aggregation: rows per key and partition, not source records)."""
    return sum(int(getattr(op, "numRowsDroppedByWatermark", 0) or 0)
               for op in (getattr(progress, "stateOperators", None) or []))


def _side_counts(record: BatchRecord, dlq_topic: str | None, late_topic: str | None) -> tuple[int, int]:
    counts = topic_counts(record)
    return (counts.get(dlq_topic, 0) if dlq_topic else 0), (counts.get(late_topic, 0) if late_topic else 0)


def batch_report(progress, read: int, record: BatchRecord | None, dlq_topic: str | None,
                 skipped: int = 0, late_topic: str | None = None) -> BatchReport:
    written, dlq, late, m = None, 0, 0, {}
    if record is not None and record.metrics:
        dlq, late = _side_counts(record, dlq_topic, late_topic)
        m = record.metrics
        written = int(m.get("records", 0)) - dlq - late
    return BatchReport(progress.batchId, read, written, dlq, skipped, int(progress.batchDuration or 0),
                       late, 0 if late_topic else dropped_by_watermark(progress),
                       int(m.get("transactions", 0)), m.get("precommit_max_ms", 0.0), m.get("commit_ms", 0.0),
                       aborted_in(m) if record is not None else {}, dict(getattr(progress, "eventTime", None) or {}),
                       _first_source(progress))


def _first_source(progress) -> tuple[str | None, str | None]:
    sources = getattr(progress, "sources", None) or []
    first = sources[0] if sources else None
    return offset_json(getattr(first, "startOffset", None)), offset_json(getattr(first, "endOffset", None))


def offset_json(given: object) -> str | None:
    """A source's offset in a batch's progress as JSON text; None when the batch has none.

    Spark's progress JSON holds the offset parsed (a JSON object). pyspark 4.3's
    ``SourceProgress.fromJson`` turns it back into JSON text; 4.0 and 4.1's take ``str()`` of the
    parsed value (a dict's Python repr, ``'None'`` for none), which is not JSON: read back here
    exactly (``ast.literal_eval`` of what ``json.loads`` made: dicts, lists, strings, numbers,
    booleans, None). Text of neither form is kept as given (not kafka-eos's offsets)."""
    if given is None or not isinstance(given, str):
        return None if given is None else json.dumps(given)
    try:
        value = json.loads(given)
    except ValueError:
        try:
            value = ast.literal_eval(given)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return given
    return None if value is None else json.dumps(value)


def format_line(name: str, report: BatchReport, metrics: dict | None, dlq_topic: str | None,
                late_topic: str | None = None) -> str:
    """The progress line of one batch: its ``report`` and its sink-log ``metrics`` (None: nothing
    committed)."""
    parts = [f"{report.read} in"]
    if report.written is not None and metrics:
        parts.append(f"{report.written} out")
        if dlq_topic:
            parts.append(f"{report.dlq} to DLQ")
        if late_topic:
            parts.append(f"{report.late} late")
        if report.skipped:
            parts.append(f"{report.skipped} skipped")
        parts += [f"{int(metrics.get('transactions', 0))} transactions", f"batch {report.duration_ms} ms",
                  f"pre-commit max {metrics.get('precommit_max_ms', 0):.0f} ms",
                  f"commit {metrics.get('commit_ms', 0):.0f} ms"]
    else:
        if report.skipped:
            parts.append(f"{report.skipped} skipped")
        parts += ["nothing committed", f"batch {report.duration_ms} ms"]
    if report.dropped:
        parts.append(f"WARNING: Spark dropped {report.dropped} rows as late (behind the watermark); "
                     "set transform.watermark.late_topic to keep them")
    return f"kafka-eos {name} batch {report.batch_id}: " + ", ".join(parts)


class ProgressReporter:
    """Call ``report(query)`` now and then (and once after the query ends)."""

    def __init__(self, cfg: PipelineConfig, redactor: Redactor, emit: Callable[[str], None] = print,
                 skipped: Callable[[], int] | None = None,
                 listeners: list[Callable[[BatchReport], None]] | None = None,
                 since_ms: int | None = None) -> None:
        self.name = cfg.name or "kafka-eos"
        self.dlq_topic = cfg.errors.dlq_topic
        self.late_topic = late_topic(cfg)
        self.scans = scans_per_batch(cfg)
        self.ranges = passes_through(cfg)
        self.location = sink_log_location(cfg)
        self.redact, self.emit, self.skipped = redactor, emit, skipped
        self.last_batch = -1
        self.input_rows = 0
        self._skipped_seen = 0
        self.lines: list[str] = []
        self.listeners = list(listeners or [])
        self._sweeps_since = since_ms  # the run's start: its query start's sweep, read at the first batch

    def _record(self, batch_id: int) -> BatchRecord | None:
        try:
            return SinkLogReader(self.location).get(batch_id)
        except Exception:  # noqa: BLE001 - progress is best effort; the sink itself reports failures
            return None

    def _start_sweeps(self) -> int:
        """What this run's query start aborted (``start_sweeps``), once; 0 after."""
        since, self._sweeps_since = self._sweeps_since, None
        if since is None or self.location is None:
            return 0
        try:
            return aborted_since(self.location, since)
        except Exception:  # noqa: BLE001 - progress is best effort
            return 0

    def _skipped_delta(self) -> int:
        if self.skipped is None:
            return 0
        total = int(self.skipped())
        delta, self._skipped_seen = total - self._skipped_seen, total
        return delta

    def report(self, query) -> None:
        """Print a line for each batch that ran since the last call."""
        for progress in sorted(query.recentProgress, key=lambda p: p.batchId):
            if progress.batchId <= self.last_batch or "addBatch" not in (progress.durationMs or {}):
                continue
            record, skipped = self._record(progress.batchId), self._skipped_delta()
            # offset-range rows (passes_through): Spark counts ranges; the sink's handles count records
            read = records_read(progress, self.scans) if not self.ranges else (
                int(record.metrics.get("records", 0)) if record and record.metrics else 0)
            report = batch_report(progress, read, record, self.dlq_topic, skipped, self.late_topic)
            report.aborted[QUERY_START] = self._start_sweeps()
            line = format_line(self.name, report, record.metrics if record else None, self.dlq_topic,
                               self.late_topic)
            self.last_batch = progress.batchId
            self.input_rows += read
            self.lines.append(self.redact(line))
            self.emit(self.lines[-1])
            for listener in self.listeners:
                listener(report)
