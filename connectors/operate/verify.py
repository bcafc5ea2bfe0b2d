"""``kafka-eos verify pipeline.yaml``: each committed batch's output, read back, against its evidence.

For the committed batches the sink log holds (``--batches A..B`` or ``--since TIME`` narrow
them), the output partitions their transactions wrote are read from a little before the oldest
batch's commit (its ``committed_at_ms`` less ``transaction.timeout.ms``; the log start for
records without it) to their high watermark, and judged by ``txn.output_audit``. Exit 0 only
when every batch in range verified; 6 when one failed, 7 when none failed and one cannot be
verified, 8 when none is in range (``exit_codes``: a scheduled check pages on 6 alone). With
``--recompute`` each verified batch is also re-run over its recorded input (``recompute``) and
its committed records compared with what the transform gives (``txn.recompute_audit``).
Invariant: verify reads the sink log and the output (Fetch, ListOffsets) and writes only its own
record beside the sink log (``record``; the CLI's ``--no-record`` leaves it out).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.exit_codes import DONE, NOTHING_IN_RANGE, UNVERIFIABLE, VERIFY_FAILED
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.cluster.control_plane import control_plane
from kafka_eos.txn.audit.output_audit import FAILED, PASSED, BatchVerdict, committed_handles, judge, place_foreign
from kafka_eos.txn.audit.output_scan import scan_start_ms, bounds, compacted_topics, scan_partition
from kafka_eos.txn.audit.recompute_audit import judge_recomputed
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLogReader
from kafka_eos.txn.protocol.states import BatchState, PartitionState
from kafka_eos.txn.log.verify_runs import record_run

if TYPE_CHECKING:
    from kafka_eos.connectors.operate.recompute import Recomputed

FORMAT_VERSION = 1
START_MARGIN_MS = 60_000  # read from this long before the oldest batch's earliest possible record


@dataclass
class VerifyReport:
    verdicts: list[BatchVerdict] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def exit_code(self) -> int:
        outcomes = {v.outcome for v in self.verdicts}
        if not outcomes:
            return NOTHING_IN_RANGE.code
        if FAILED in outcomes:
            return VERIFY_FAILED.code
        return DONE.code if outcomes == {PASSED} else UNVERIFIABLE.code

    def document(self) -> dict[str, Any]:
        counts = {o: sum(1 for v in self.verdicts if v.outcome == o) for o in {v.outcome for v in self.verdicts}}
        first = next((v for v in self.verdicts if v.outcome != PASSED), None)
        return {"format_version": FORMAT_VERSION, "exit_code": self.exit_code, "batches": counts, "note": self.note,
                "first_problem": None if first is None else {"batch": first.batch_id, **(first.first_problem or {})},
                "outside_batches": self.outside,
                "per_batch": [{"batch": v.batch_id, "outcome": v.outcome, "records": v.records,
                               **({} if v.recomputed is None else {"recomputed": v.recomputed}),
                               "ranges": v.ranges,
                               "problems": v.problems} for v in self.verdicts]}


def parse_batches(text: str | None) -> tuple[int, int] | None:
    """``A..B`` (either end may be left out) -> (A, B) inclusive."""
    if not text:
        return None
    low, sep, high = text.partition("..")
    if not sep:
        raise ValueError(f"--batches {text!r}: write A..B (A.. or ..B for an open end)")
    return (int(low) if low else 0, int(high) if high else 2**63 - 1)


def committed_in_range(reader: SinkLogReader, batches: tuple[int, int] | None, since_ms: int | None) -> list[BatchRecord]:
    out = []
    for batch_id in reader.batch_ids():
        if batches and not batches[0] <= batch_id <= batches[1]:
            continue
        record = reader.get(batch_id)
        if record is None or record.state is not BatchState.COMMITTED:
            continue
        if since_ms is not None and record.metrics.get("committed_at_ms", 0) < since_ms:
            continue
        out.append(record)
    return out


def verify(cfg: PipelineConfig, batches: tuple[int, int] | None = None, since_ms: int | None = None,
           progress: Callable[[str], None] = lambda line: None,
           recompute: Callable[[list[int]], Recomputed] | None = None) -> VerifyReport:
    """``verify_sink`` of the pipeline's sink."""
    return verify_sink(sink_config(sink_options(cfg)), batches, since_ms, progress, recompute)


def verify_sink(config: SinkConfig, batches: tuple[int, int] | None = None, since_ms: int | None = None,
                progress: Callable[[str], None] = lambda line: None,
                recompute: Callable[[list[int]], Recomputed] | None = None) -> VerifyReport:
    """Judge the batches in range (``output_audit``); with ``recompute`` (``recompute.replay_batches``
    bound to the query), also each verified batch's records against its re-run (``recompute_audit``)."""
    records = committed_in_range(SinkLogReader(config.log_location), batches, since_ms)
    if not records:
        return VerifyReport(note="no committed batch in range in the sink log (it keeps committed batches for "
                                 "sink.evidence_retention_ms, 7 days by default)")
    handles = {r.batch_id: committed_handles(r.handles_with(PartitionState.COMMITTED)) for r in records}
    partitions = sorted({(t, int(p)) for hs in handles.values() for h in hs for t, ps in h.partitions.items() for p in ps})
    times = [int(r.metrics["committed_at_ms"]) if "committed_at_ms" in r.metrics else None for r in records]
    start_ms = scan_start_ms(times, (h for hs in handles.values() for h in hs), config.transaction_timeout_ms,
                             START_MARGIN_MS)
    reader = control_plane(config.client_conf())
    expected = {(h.producer_id, h.producer_epoch) for hs in handles.values() for h in hs}
    compacted = compacted_topics(config.client_conf(), sorted({t for t, _ in partitions}), progress)
    scans = {}
    for (topic, p), where in bounds(reader, partitions, start_ms).items():
        progress(f"reading {topic}[{p}] offsets {max(where.start, where.log_start):,}-{where.end:,}")
        scans[(topic, p)] = scan_partition(reader, topic, p, where, expected, progress, topic in compacted,
                                           sets=recompute is not None)
    verdicts = {b: judge(b, hs, scans) for b, hs in handles.items()}
    outside = place_foreign(verdicts, handles, scans)
    if recompute is not None:
        again = recompute(sorted(verdicts))
        for b, verdict in verdicts.items():
            judge_recomputed(verdict, handles[b], scans, again.sets.get(b), again.missing.get(b, ""),
                             again.compacted_inputs)
    return VerifyReport([verdicts[b] for b in sorted(verdicts)], outside)


def record(cfg: PipelineConfig, report: VerifyReport) -> str | None:
    """Record the run beside the sink log (``txn.verify_runs``) for ``status`` and the driver's
    metrics; returns the record's name (None when nothing was judged)."""
    if not report.verdicts:
        return None
    outcomes: dict[str, list[int]] = {}
    for v in report.verdicts:
        outcomes.setdefault(v.outcome, []).append(v.batch_id)
    verified = outcomes.get(PASSED, [])
    first = report.document()["first_problem"]
    return record_run(sink_config(sink_options(cfg)).log_location, outcomes, max(verified) if verified else None, first)


def render(cfg: PipelineConfig, report: VerifyReport, as_json: bool = False) -> str:
    if as_json:
        return json.dumps({"pipeline": cfg.name, **report.document()}, indent=1)
    doc = report.document()
    lines = [f"kafka-eos verify {cfg.name}: batch {v.batch_id}: {v.outcome} ({v.records:,} records"
             + ("" if v.recomputed is None else f", {v.recomputed:,} recomputed") + ")"
             + "".join(f"\n  {p}" for p in v.problems) for v in report.verdicts]
    lines += [f"kafka-eos verify {cfg.name}: outside the batches verified: {line}" for line in report.outside]
    if report.note:
        lines.append(f"kafka-eos verify {cfg.name}: {report.note}")
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(doc["batches"].items())) or "nothing verified"
    lines.append(f"kafka-eos verify {cfg.name}: {summary}" + (
        f"; first problem: batch {doc['first_problem']['batch']} at {doc['first_problem'].get('topic')}"
        f"[{doc['first_problem'].get('partition')}] offset {doc['first_problem'].get('offset')}"
        if doc["first_problem"] else ""))
    return "\n".join(lines)


def since_ms_of(text: str | None) -> int | None:
    """``--since``: an ISO time (UTC unless it names a zone) or epoch milliseconds."""
    if not text:
        return None
    if text.isdigit():
        return int(text)
    from datetime import datetime, timezone
    when = datetime.fromisoformat(text)
    return int((when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp() * 1000)

