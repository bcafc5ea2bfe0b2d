"""Opt-in Prometheus endpoint on the driver: the batches' numbers and the operator probe's facts.

Every metric is one row of ``METRICS`` (name, type, labels, meaning, where it comes from); the
registry is built from it, and so is the reference between ``<!-- metrics -->`` and
``<!-- /metrics -->`` in ``config/README.md`` (``render_reference``; a unit test fails when they
differ; regenerate with ``python -m kafka_eos.connectors.operate.metrics config/README.md``).

Invariants:
- Where it serves is decided once (``endpoint``): the port of ``kafka-eos run --metrics-port``
  over the file's ``metrics.port``; the host of the file's ``metrics.host``, else 127.0.0.1
  (loopback). Without either, nothing is served.
- The endpoint has a registry of its own (no process or platform collectors of other code).
- It is a listener: it reads ``BatchReport``s and ``OutputFacts`` and changes nothing the run does.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from kafka_eos.config.model import DEFAULT_METRICS_HOST, MetricsSpec, PipelineConfig
from kafka_eos.connectors.operate.metrics_server import MetricsServer
from kafka_eos.connectors.operate.operator_probe import OperatorProbe, OutputFacts, for_pipeline
from kafka_eos.connectors.pipeline.progress import BatchReport
from kafka_eos.txn.abort_tally import ALL_REASONS as ABORT_REASONS

HOST = DEFAULT_METRICS_HOST
BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
COMMIT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
DECISION_STATES = ("none", "committed", "decided-pending", "lost")
VERIFY_OUTCOMES = {"verified": "verified", "failed": "failed", "cannot be verified": "unverifiable"}
BATCH, PROBE, RUN = "each batch", "operator probe (every `metrics.sample_interval_s`)", "the run"


@dataclass(frozen=True)
class Metric:
    name: str           # as exported (counters with their ``_total``)
    kind: str           # counter, gauge or histogram
    labels: tuple[str, ...]
    meaning: str
    source: str


P, TP = ("pipeline",), ("pipeline", "topic", "partition")
METRICS = (
    Metric("kafka_eos_records_read_total", "counter", P, "records the batches read", BATCH),
    Metric("kafka_eos_records_written_total", "counter", P, "records committed to the output topic", BATCH),
    Metric("kafka_eos_records_dlq_total", "counter", P, "records committed to the DLQ topic", BATCH),
    Metric("kafka_eos_records_skipped_total", "counter", P, "records skipped as undecodable "
           "(`on_decode_error: skip`)", BATCH),
    Metric("kafka_eos_records_late_total", "counter", P, "records committed to the late topic", BATCH),
    Metric("kafka_eos_rows_dropped_late_total", "counter", P, "rows Spark dropped as behind the watermark "
           "(no late topic)", BATCH),
    Metric("kafka_eos_batches_committed_total", "counter", P, "batches whose transactions were committed", BATCH),
    Metric("kafka_eos_transactions_committed_total", "counter", P, "Kafka transactions committed (one per "
           "sink task with records)", BATCH),
    Metric("kafka_eos_transactions_aborted_total", "counter", ("pipeline", "reason"), "open transactions the "
           "pipeline aborted, by `reason`: `query_start` (an earlier run's, swept as the query starts), "
           "`replay_duplicate` (a replay's re-write of an output partition already committed), `lingering` (dead "
           "task attempts' and earlier runs' transactions, swept after each commit), `failed_batch` (the "
           "transactions of a batch Spark gave up on); counted with the next batch. kafka-eos fences no producer: each task "
           "attempt has its own transactional id and an abort ends a transaction under its own epoch; one the "
           "broker aborted on timeout is lost (`kafka_eos_decision_state{state=\"lost\"}`)", BATCH),
    Metric("kafka_eos_batch_duration_seconds", "histogram", P, "batch duration (Spark's)", BATCH),
    Metric("kafka_eos_precommit_seconds", "histogram", P, "the batch's slowest pre-commit (a task's flush "
           "until its transaction is ready)", BATCH),
    Metric("kafka_eos_commit_seconds", "histogram", P, "decision to committed: the batch's EndTxn round", BATCH),
    Metric("kafka_eos_last_committed_batch", "gauge", P, "the newest batch whose output was committed "
           "(-1: none yet)", BATCH),
    Metric("kafka_eos_offsets_behind", "gauge", TP, "records between the batch's end and the latest offset "
           "the source saw, per source partition", BATCH),
    Metric("kafka_eos_open_transactions", "gauge", P, "Ongoing transactions under the sink's "
           "transactional-id prefix (every owner's)", PROBE),
    Metric("kafka_eos_oldest_open_transaction_seconds", "gauge", P, "age of the oldest of them (0: none)",
           PROBE),
    Metric("kafka_eos_oldest_open_transaction_timeout_seconds", "gauge", P, "its `transaction.timeout.ms`: "
           "the broker aborts it at that age (0: none open)", PROBE),
    Metric("kafka_eos_output_held_back_records", "gauge", TP, "records between an output partition's last "
           "stable offset and its high watermark: what `read_committed` readers cannot read yet", PROBE),
    Metric("kafka_eos_output_held_back_seconds", "gauge", TP, "how long that partition's last stable offset "
           "has stood still while held (0: not held)", PROBE),
    Metric("kafka_eos_decision_state", "gauge", ("pipeline", "state"), "1 for the state of the sink log's "
           "newest decision (`none`, `committed`, `decided-pending`, `lost`), 0 for the others", PROBE),
    Metric("kafka_eos_decision_batch", "gauge", P, "the batch of that decision (-1: none)", PROBE),
    Metric("kafka_eos_probe_failures_total", "counter", P, "operator probe samples that failed (a broker "
           "down or refusing); the probe's gauges keep their last values", PROBE),
    Metric("kafka_eos_probe_last_success_timestamp_seconds", "gauge", P, "Unix time of the last sample that "
           "succeeded", PROBE),
    Metric("kafka_eos_verify_batches_total", "counter", ("pipeline", "outcome"), "batches `kafka-eos verify` "
           "judged in runs recorded since this run started, by `outcome`: `verified`, `failed`, `unverifiable` "
           "(alert on `increase(...{outcome=\"failed\"}[1d]) > 0`)", PROBE),
    Metric("kafka_eos_verify_newest_verified_batch", "gauge", P, "the newest batch the last recorded verify run "
           "verified (-1: none)", PROBE),
    Metric("kafka_eos_verify_last_run_timestamp_seconds", "gauge", P, "Unix time of the last recorded verify run "
           "(0: none)", PROBE),
    Metric("kafka_eos_run_start_timestamp_seconds", "gauge", P, "Unix time this run (driver process) started: "
           "an error that stops the query ends the run, so `changes()` of it counts restarts", RUN),
)


def _register(registry) -> dict[str, object]:
    from prometheus_client import Counter, Gauge, Histogram
    made: dict[str, object] = {}
    for m in METRICS:
        labels = list(m.labels)
        if m.kind == "counter":
            made[m.name] = Counter(m.name.removesuffix("_total"), m.meaning, labels, registry=registry)
        elif m.kind == "gauge":
            made[m.name] = Gauge(m.name, m.meaning, labels, registry=registry)
        else:
            buckets = BUCKETS if m.name == "kafka_eos_batch_duration_seconds" else COMMIT_BUCKETS
            made[m.name] = Histogram(m.name, m.meaning, labels, buckets=buckets, registry=registry)
    return made


class PrometheusMetrics:
    """``PrometheusMetrics(name, port)`` serves /metrics; call it with each ``BatchReport``, and
    ``facts`` / ``probe_failed`` with the operator probe's samples."""

    def __init__(self, pipeline: str, port: int, host: str = HOST, user_info: str | None = None,
                 cert_file: str | None = None, key_file: str | None = None) -> None:
        from prometheus_client import CollectorRegistry
        self.registry = CollectorRegistry()
        self.m = _register(self.registry)
        self.pipeline = pipeline
        self._metric("kafka_eos_last_committed_batch").set(-1)
        self._metric("kafka_eos_decision_batch").set(-1)
        self._metric("kafka_eos_run_start_timestamp_seconds").set_to_current_time()
        for metric in METRICS:
            if metric.kind == "counter" and metric.labels == P:
                self._metric(metric.name)  # exported as 0 before the first batch
        for reason in ABORT_REASONS:
            self._metric("kafka_eos_transactions_aborted_total", reason)
        for outcome in VERIFY_OUTCOMES.values():
            self._metric("kafka_eos_verify_batches_total", outcome)
        self._metric("kafka_eos_verify_newest_verified_batch").set(-1)
        self._metric("kafka_eos_verify_last_run_timestamp_seconds").set(0)
        self.probe: OperatorProbe | None = None   # started by ``serve`` for an exactly-once pipeline
        self._server = MetricsServer(self.registry, host, port, user_info, cert_file, key_file)
        self.port = self._server.port

    def _metric(self, name: str, *labels: str):
        return self.m[name].labels(self.pipeline, *labels)  # type: ignore[attr-defined]

    def __call__(self, report: BatchReport) -> None:
        self._metric("kafka_eos_records_read_total").inc(report.read)
        self._metric("kafka_eos_records_skipped_total").inc(report.skipped)
        self._metric("kafka_eos_rows_dropped_late_total").inc(report.dropped)
        self._metric("kafka_eos_batch_duration_seconds").observe(report.duration_ms / 1000)
        if report.written is not None:
            self._metric("kafka_eos_records_written_total").inc(report.written)
            self._metric("kafka_eos_records_dlq_total").inc(report.dlq)
            self._metric("kafka_eos_records_late_total").inc(report.late)
            self._metric("kafka_eos_last_committed_batch").set(report.batch_id)
            self._metric("kafka_eos_batches_committed_total").inc()
            self._metric("kafka_eos_transactions_committed_total").inc(report.transactions)
            self._metric("kafka_eos_precommit_seconds").observe(report.precommit_ms / 1000)
            self._metric("kafka_eos_commit_seconds").observe(report.commit_ms / 1000)
        for reason, aborted in report.aborted.items():
            self._metric("kafka_eos_transactions_aborted_total", reason).inc(aborted)
        for (topic, partition), behind in report.behind.items():
            self._metric("kafka_eos_offsets_behind", topic, str(partition)).set(behind)

    def facts(self, facts: OutputFacts) -> None:
        self._metric("kafka_eos_open_transactions").set(facts.open_transactions)
        self._metric("kafka_eos_oldest_open_transaction_seconds").set(facts.oldest_open_s)
        self._metric("kafka_eos_oldest_open_transaction_timeout_seconds").set(facts.oldest_timeout_s)
        for (topic, partition), held in facts.held_records.items():
            self._metric("kafka_eos_output_held_back_records", topic, str(partition)).set(held)
            self._metric("kafka_eos_output_held_back_seconds", topic, str(partition)).set(
                facts.held_seconds.get((topic, partition), 0.0))
        for state in DECISION_STATES:
            self._metric("kafka_eos_decision_state", state).set(1 if state == facts.decision_state else 0)
        self._metric("kafka_eos_decision_batch").set(facts.decision_batch)
        for run in facts.verify_runs:
            for outcome, label in VERIFY_OUTCOMES.items():
                self._metric("kafka_eos_verify_batches_total", label).inc(run.count(outcome))
        if facts.latest_verify is not None:
            newest = facts.latest_verify.newest_verified
            self._metric("kafka_eos_verify_newest_verified_batch").set(-1 if newest is None else newest)
            self._metric("kafka_eos_verify_last_run_timestamp_seconds").set(facts.latest_verify.at_ms / 1000)
        self._metric("kafka_eos_probe_last_success_timestamp_seconds").set_to_current_time()

    def probe_failed(self, _error: BaseException) -> None:
        self._metric("kafka_eos_probe_failures_total").inc()

    def close(self) -> None:
        if self.probe is not None:
            self.probe.close()
        self._server.close()


def endpoint(cfg: PipelineConfig, port: int | None = None, host: str | None = None) -> MetricsSpec | None:
    """Where ``cfg``'s run serves metrics: ``port`` and ``host`` (the command line) over the file's
    port and host; a host alone serves nothing."""
    if port is None and cfg.metrics is None:
        return None
    spec = cfg.metrics or MetricsSpec()
    return replace(spec, port=spec.port if port is None else port, host=host or spec.host)


def endpoint_problems(cfg: PipelineConfig, port: int | None, host: str | None) -> list[str]:
    """What the metrics rule (``config.rules_metrics``) refuses in the endpoint the command line makes."""
    from kafka_eos.config.rules_metrics import endpoint_violations
    if port is None and host is None:
        return []  # the file's own endpoint: validation checked it
    spec = endpoint(cfg, port, host)
    return [str(v) for v in endpoint_violations(spec)] if spec else []


def serve(cfg: PipelineConfig, port: int | None, emit: Callable[[str], None],
          host: str | None = None) -> PrometheusMetrics | None:
    """Start the endpoint ``endpoint`` names (and say where) with its operator probe, or None when
    none is asked for."""
    spec = endpoint(cfg, port, host)
    if spec is None:
        return None
    auth = spec.basic_auth_user_info.reveal() if spec.basic_auth_user_info else None
    metrics = PrometheusMetrics(cfg.name or "kafka-eos", spec.port, spec.host, auth, spec.tls_cert_file,
                                spec.tls_key_file)
    metrics.probe = for_pipeline(cfg, metrics.facts, metrics.probe_failed)
    emit(f"kafka-eos {cfg.name}: metrics at {replace(spec, port=metrics.port).url}")
    return metrics


_BLOCK = re.compile(r"(<!-- metrics -->\n)(.*?)(<!-- /metrics -->)", re.S)


def reference() -> str:
    """The markdown table of every metric."""
    rows = ["| metric | type | labels | meaning | updated |", "|--------|------|--------|---------|---------|"]
    rows += [f"| `{m.name}` | {m.kind} | {', '.join(f'`{label}`' for label in m.labels)} | {m.meaning} | {m.source} |"
             for m in METRICS]
    return "\n".join(rows) + "\n"


def render_reference(text: str) -> str:
    """``text`` with its metrics block replaced by ``reference()``."""
    return _BLOCK.sub(lambda m: m.group(1) + reference() + m.group(3), text)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        path = Path(name)
        path.write_text(render_reference(path.read_text()))
