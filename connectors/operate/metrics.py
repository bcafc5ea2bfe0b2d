"""Opt-in Prometheus endpoint on the driver: the batches' numbers, the run, and the pipeline's probes.

The metrics are the rows of ``metric_table.METRICS`` (the reference in ``config/README.md`` is
rendered from them: ``python -m kafka_eos.connectors.operate.metrics config/README.md``).

Invariants:
- Where it serves is decided once (``endpoint``): the port of ``kafka-eos run --metrics-port``
  over the file's ``metrics.port``; the host of the file's ``metrics.host``, else 127.0.0.1
  (loopback). Without either, nothing is served.
- The endpoint has a registry of its own (no process or platform collectors of other code).
- It is a listener: it reads ``BatchReport``s and the probes' facts and changes nothing the run does.
- The probes' series are the monitor's (``probe_gauges``), labelled ``exporter="driver"``.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kafka_eos.config.model import DEFAULT_METRICS_HOST, MetricsSpec, PipelineConfig
from kafka_eos.connectors.operate.metric_table import DRIVER, METRICS, P, register, render_reference
from kafka_eos.connectors.operate.metrics_server import MetricsServer
from kafka_eos.connectors.operate.operator_probe import OperatorProbe
from kafka_eos.connectors.operate.probe_gauges import ProbeGauges
from kafka_eos.connectors.operate.probes import start_probes
from kafka_eos.txn.protocol.abort_tally import ALL_REASONS as ABORT_REASONS

if TYPE_CHECKING:  # the monitor imports this package without Spark; the progress module needs it
    from kafka_eos.connectors.pipeline.progress import BatchReport

HOST = DEFAULT_METRICS_HOST
__all__ = ["METRICS", "PrometheusMetrics", "endpoint", "endpoint_problems", "render_reference", "serve"]


class PrometheusMetrics:
    """``PrometheusMetrics(name, port)`` serves /metrics; call it with each ``BatchReport``; the
    probes (``serve`` starts them) publish to ``gauges``."""

    def __init__(self, pipeline: str, port: int, host: str = HOST, user_info: str | None = None,
                 cert_file: str | None = None, key_file: str | None = None) -> None:
        from prometheus_client import CollectorRegistry
        self.registry = CollectorRegistry()
        self.m = register(self.registry)
        self.pipeline = pipeline
        self.gauges = ProbeGauges(self.m, pipeline, DRIVER)
        self._metric("kafka_eos_last_committed_batch").set(-1)
        self._metric("kafka_eos_run_start_timestamp_seconds").set_to_current_time()
        for metric in METRICS:
            if metric.kind == "counter" and metric.labels == P:
                self._metric(metric.name)  # exported as 0 before the first batch
        for reason in ABORT_REASONS:
            self._metric("kafka_eos_transactions_aborted_total", reason)
        self.probes: list[OperatorProbe] = []   # started by ``serve``
        self._server = MetricsServer(self.registry, host, port, user_info, cert_file, key_file)
        self.port = self._server.port

    def _metric(self, name: str, *labels: str):
        return self.m[name].labels(self.pipeline, *labels)  # type: ignore[attr-defined]

    def __call__(self, report: "BatchReport") -> None:
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

    def close(self) -> None:
        for probe in self.probes:
            probe.close()
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
    """Start the endpoint ``endpoint`` names (and say where) with the pipeline's probes, or None
    when none is asked for."""
    spec = endpoint(cfg, port, host)
    if spec is None:
        return None
    auth = spec.basic_auth_user_info.reveal() if spec.basic_auth_user_info else None
    metrics = PrometheusMetrics(cfg.name or "kafka-eos", spec.port, spec.host, auth, spec.tls_cert_file,
                                spec.tls_key_file)
    metrics.probes = start_probes(cfg, metrics.gauges)
    emit(f"kafka-eos {cfg.name}: metrics at {replace(spec, port=metrics.port).url}")
    return metrics


if __name__ == "__main__":
    for name in sys.argv[1:]:
        path = Path(name)
        path.write_text(render_reference(path.read_text()))
