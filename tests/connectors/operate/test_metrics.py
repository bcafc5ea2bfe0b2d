"""The Prometheus listener: counters and gauges from batch reports, served on 127.0.0.1."""
from __future__ import annotations

import urllib.request
from types import SimpleNamespace

from kafka_eos.connectors.operate.metrics import PrometheusMetrics
from kafka_eos.connectors.pipeline.progress import BatchReport, batch_report


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def test_reports_become_counters_histogram_and_gauges():
    metrics = PrometheusMetrics("p", 0)
    try:
        assert scrape(metrics.port)['kafka_eos_last_committed_batch{pipeline="p"}'] == -1
        metrics(BatchReport(0, 100, 97, 3, 0, 1500))
        metrics(BatchReport(1, 10, None, 0, 2, 200))        # nothing committed
        got = scrape(metrics.port)
        assert got['kafka_eos_records_read_total{pipeline="p"}'] == 110
        assert got['kafka_eos_records_written_total{pipeline="p"}'] == 97
        assert got['kafka_eos_records_dlq_total{pipeline="p"}'] == 3
        assert got['kafka_eos_records_skipped_total{pipeline="p"}'] == 2
        assert got['kafka_eos_batch_duration_seconds_count{pipeline="p"}'] == 2
        assert got['kafka_eos_last_committed_batch{pipeline="p"}'] == 0
        assert not [k for k in got if k.startswith("kafka_eos_offsets_behind")], "lag is the probe's, not a batch's"
    finally:
        metrics.close()


def test_the_aborts_a_committed_record_reports_become_a_counter_by_reason():
    from kafka_eos.txn.log.sink_log import COMMITTED, BatchRecord
    metrics = PrometheusMetrics("p", 0)
    try:
        got = scrape(metrics.port)
        assert {got[f'kafka_eos_transactions_aborted_total{{pipeline="p",reason="{r}"}}']
                for r in ("query_start", "replay_duplicate", "lingering", "failed_batch")} == {0}, \
            "exported before any abort"
        progress = SimpleNamespace(batchId=4, batchDuration=90, sources=[])
        record = BatchRecord(4, COMMITTED, 1, (), {}, {"records": 7.0, "aborted_lingering": 2.0,
                                                       "aborted_failed_batch": 1.0})
        metrics(batch_report(progress, 7, record, None))
        metrics(batch_report(progress, 7, record, None))
        got = scrape(metrics.port)
        assert got['kafka_eos_transactions_aborted_total{pipeline="p",reason="lingering"}'] == 4
        assert got['kafka_eos_transactions_aborted_total{pipeline="p",reason="failed_batch"}'] == 2
        assert got['kafka_eos_transactions_aborted_total{pipeline="p",reason="replay_duplicate"}'] == 0
    finally:
        metrics.close()


def test_batch_report_from_spark_progress():
    progress = SimpleNamespace(batchId=3, batchDuration=120, sources=[])
    report = batch_report(progress, 10, None, None)
    assert (report.batch_id, report.read, report.written, report.duration_ms) == (3, 10, None, 120)


def test_the_command_lines_host_binds_the_endpoint_and_meets_the_files_rule(tmp_path):
    """``--metrics-host`` binds where the file does not say (a container's Prometheus scrapes
    ``job:9464``); a host alone serves nothing; the rule of the file's endpoint holds for the
    flags' endpoint: basic auth off loopback without TLS is refused."""
    from kafka_eos.config.model import MetricsSpec
    from kafka_eos.connectors.operate.metrics import endpoint, endpoint_problems
    from tests.factories import load, valid
    data = valid(tmp_path)
    cfg, _ = load(tmp_path, data)
    assert endpoint(cfg, None, "0.0.0.0") is None, "a host alone serves nothing"
    assert endpoint(cfg, 9000, "0.0.0.0") == MetricsSpec(9000, "0.0.0.0")
    assert endpoint_problems(cfg, 9000, "0.0.0.0") == []
    assert "not an IP address" in " ".join(endpoint_problems(cfg, 9000, "http://x:1"))
    data["metrics"] = {"port": 9100, "basic_auth_user_info": "u:p"}
    cfg, _ = load(tmp_path, data)
    assert endpoint_problems(cfg, 9100, None) == [], "loopback: basic auth is allowed without TLS"
    refused = endpoint_problems(cfg, None, "0.0.0.0")
    assert len(refused) == 1 and "clear text" in refused[0] and "u:p" not in refused[0], refused


def test_the_endpoint_is_the_files_unless_the_command_line_names_a_port(tmp_path):
    from kafka_eos.config.model import MetricsSpec
    from kafka_eos.connectors.operate.metrics import endpoint, serve
    from tests.factories import load, valid
    data = valid(tmp_path)
    cfg, _ = load(tmp_path, data)
    assert endpoint(cfg) is None and serve(cfg, None, print) is None, "nothing asked, nothing served"
    assert endpoint(cfg, 9000) == MetricsSpec(9000, "127.0.0.1"), "the flag alone: loopback"
    data["metrics"] = {"port": 9100, "host": "0.0.0.0"}
    cfg, _ = load(tmp_path, data)
    assert endpoint(cfg) == MetricsSpec(9100, "0.0.0.0")
    assert endpoint(cfg, 9200) == MetricsSpec(9200, "0.0.0.0"), "the flag overrides the port, not the host"
    assert endpoint(cfg, None, "::1") == MetricsSpec(9100, "::1"), "--metrics-host over the file's host"
    data["metrics"] = {"port": 9100}
    data["guarantee"] = "at_least_once"   # no output probe; the lag probe asks no broker before a commit
    cfg, _ = load(tmp_path, data)
    lines: list[str] = []
    metrics = serve(cfg, 0, lines.append)
    try:
        assert lines == [f"kafka-eos t: metrics at http://127.0.0.1:{metrics.port}/metrics"]
        got = scrape(metrics.port)
        assert got['kafka_eos_last_committed_batch{pipeline="t"}'] == -1
        assert got['kafka_eos_batch_budget_seconds{exporter="driver",pipeline="t"}'] == 10 + 120, "trigger + margin"
        assert got['kafka_eos_probe_failures_total{exporter="driver",pipeline="t",probe="lag"}'] == 0
        assert not [k for k in got if 'probe="output"' in k], "at-least-once: no transactions to watch"
        assert [p.interval_s for p in metrics.probes] == [15]
    finally:
        metrics.close()
