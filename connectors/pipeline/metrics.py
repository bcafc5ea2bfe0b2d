"""Opt-in Prometheus endpoint on the driver, fed by the runner's per-batch reports.

    kafka_eos_records_read_total{pipeline}        records the batches read
    kafka_eos_records_written_total{pipeline}     records committed to the output topic
    kafka_eos_records_dlq_total{pipeline}         records committed to the DLQ topic
    kafka_eos_records_skipped_total{pipeline}     records skipped (on_decode_error: skip)
    kafka_eos_records_late_total{pipeline}        records committed to the late topic
    kafka_eos_rows_dropped_late_total{pipeline}   rows Spark dropped as late (no late topic)
    kafka_eos_batch_duration_seconds{pipeline}    histogram of batch durations
    kafka_eos_last_committed_batch{pipeline}      the newest batch whose output was committed
    kafka_eos_offsets_behind{pipeline,topic,partition}  records between the batch's end and the
                                                  latest offset the source saw (when it reports one)

Invariants:
- Where it serves is decided once (``endpoint``): the port of ``kafka-eos run --metrics-port``
  over the file's ``metrics.port``; the host of the file's ``metrics.host``, else 127.0.0.1
  (loopback). Without either, nothing is served.
- The endpoint has a registry of its own (no process or platform collectors of other code).
- It is a listener: it reads ``BatchReport``s and changes nothing the run does.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from kafka_eos.config.model import DEFAULT_METRICS_HOST, MetricsSpec, PipelineConfig
from kafka_eos.connectors.pipeline.progress import BatchReport

HOST = DEFAULT_METRICS_HOST
BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class PrometheusMetrics:
    """``PrometheusMetrics(name, port)`` serves /metrics; call it with each ``BatchReport``."""

    def __init__(self, pipeline: str, port: int, host: str = HOST) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
        self.registry = registry = CollectorRegistry()
        labels = ["pipeline"]
        self.read = Counter("kafka_eos_records_read", "Records the batches read", labels, registry=registry)
        self.written = Counter("kafka_eos_records_written", "Records committed to the output topic", labels,
                               registry=registry)
        self.dlq = Counter("kafka_eos_records_dlq", "Records committed to the DLQ topic", labels, registry=registry)
        self.skipped = Counter("kafka_eos_records_skipped", "Records skipped as undecodable", labels,
                               registry=registry)
        self.late = Counter("kafka_eos_records_late", "Records committed to the late topic", labels,
                            registry=registry)
        self.dropped = Counter("kafka_eos_rows_dropped_late", "Rows Spark dropped as behind the watermark", labels,
                               registry=registry)
        self.duration = Histogram("kafka_eos_batch_duration_seconds", "Batch duration", labels, buckets=BUCKETS,
                                  registry=registry)
        self.last_batch = Gauge("kafka_eos_last_committed_batch", "Newest committed batch id", labels,
                                registry=registry)
        self.behind = Gauge("kafka_eos_offsets_behind", "Records behind the latest offset the source saw",
                            [*labels, "topic", "partition"], registry=registry)
        self.pipeline = pipeline
        self.last_batch.labels(pipeline).set(-1)
        for counter in (self.read, self.written, self.dlq, self.skipped, self.late, self.dropped):
            counter.labels(pipeline)  # exported as 0 before the first batch
        self._server = start_http_server(port, addr=host, registry=registry)
        self.port = self._server[0].server_port if isinstance(self._server, tuple) else port

    def __call__(self, report: BatchReport) -> None:
        name = self.pipeline
        self.read.labels(name).inc(report.read)
        self.skipped.labels(name).inc(report.skipped)
        self.dropped.labels(name).inc(report.dropped)
        self.duration.labels(name).observe(report.duration_ms / 1000)
        if report.written is not None:
            self.written.labels(name).inc(report.written)
            self.dlq.labels(name).inc(report.dlq)
            self.late.labels(name).inc(report.late)
            self.last_batch.labels(name).set(report.batch_id)
        for (topic, partition), behind in report.behind.items():
            self.behind.labels(name, topic, str(partition)).set(behind)

    def close(self) -> None:
        if isinstance(self._server, tuple):
            server, thread = self._server
            server.shutdown()
            server.server_close()
            thread.join(5)


def endpoint(cfg: PipelineConfig, port: int | None = None) -> MetricsSpec | None:
    """Where ``cfg``'s run serves metrics: ``port`` (the command line) over the file's port."""
    if port is None:
        return cfg.metrics
    return replace(cfg.metrics or MetricsSpec(), port=port)


def serve(cfg: PipelineConfig, port: int | None, emit: Callable[[str], None]) -> PrometheusMetrics | None:
    """Start the endpoint ``endpoint`` names (and say where), or None when none is asked for."""
    spec = endpoint(cfg, port)
    if spec is None:
        return None
    metrics = PrometheusMetrics(cfg.name or "kafka-eos", spec.port, spec.host)
    emit(f"kafka-eos {cfg.name}: metrics at {replace(spec, port=metrics.port).url}")
    return metrics
