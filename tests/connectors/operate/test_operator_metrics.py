"""The operator's metrics: the probes' facts as gauges (exporter="driver" on the driver's endpoint),
the held-back clock, and the metric reference in config/README.md kept equal to the code's table."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_eos.connectors.operate.lag import LagFacts, PartitionLag
from kafka_eos.connectors.operate.metrics import METRICS, PrometheusMetrics, render_reference
from kafka_eos.txn.log.follow_state import FollowLag
from kafka_eos.connectors.operate.operator_probe import HeldClock, OperatorProbe, OutputFacts, output_topics
from kafka_eos.connectors.pipeline.progress import BatchReport
from tests.connectors.operate.test_metrics import scrape

README = Path(__file__).resolve().parents[3] / "config" / "README.md"


def test_the_readme_reference_is_the_codes_table():
    text = README.read_text()
    assert "<!-- metrics -->" in text
    assert render_reference(text) == text, "regenerate: python -m kafka_eos.connectors.operate.metrics config/README.md"


def test_the_endpoint_exports_exactly_the_referenced_metrics():
    metrics = PrometheusMetrics("p", 0)
    try:
        metrics(BatchReport(0, 10, 10, 0, 0, 100, transactions=2, precommit_ms=40, commit_ms=12))
        metrics.gauges.settings(130.0, 15, 32.0)
        metrics.gauges.expect("output")
        metrics.gauges.output(OutputFacts(1, 5.0, 900.0, {("out", 0): 3}, {("out", 0): 5.0}, "committed", 0,
                                          follow=FollowLag(2, 1.5, 0, 7, 1_700_000_000_000)))
        metrics.gauges.lag(LagFacts({("in", 0): PartitionLag(1, 2.0)}, 0, 1.7e9))
        metrics.gauges.failed("lag", TimeoutError())
        exported = {key.split("{")[0] for key in scrape(metrics.port)}
    finally:
        metrics.close()
    histograms = {m.name for m in METRICS if m.kind == "histogram"}
    exported = {name for name in exported if not name.endswith("_created")}
    for suffix in ("_bucket", "_count", "_sum"):
        exported = {name.removesuffix(suffix) if name.removesuffix(suffix) in histograms else name
                    for name in exported}
    assert exported == {m.name for m in METRICS}


def test_facts_become_gauges_and_a_committed_batch_its_latencies():
    metrics = PrometheusMetrics("p", 0)
    d = 'exporter="driver",pipeline="p"'
    try:
        metrics.gauges.expect("output")
        got = scrape(metrics.port)
        assert got[f'kafka_eos_decision_batch{{{d}}}'] == -1
        assert got['kafka_eos_run_start_timestamp_seconds{pipeline="p"}'] > 1.7e9
        metrics(BatchReport(4, 10, 10, 0, 0, 100, transactions=3, precommit_ms=40, commit_ms=12))
        metrics.gauges.output(OutputFacts(2, 61.5, 900.0, {("out", 0): 7, ("out", 1): 0}, {("out", 0): 30.0},
                                          "decided-pending", 5, decided_open=1, oldest_decided_s=40.0))
        got = scrape(metrics.port)
        assert got['kafka_eos_transactions_committed_total{pipeline="p"}'] == 3
        assert got['kafka_eos_batches_committed_total{pipeline="p"}'] == 1
        assert got['kafka_eos_commit_seconds_sum{pipeline="p"}'] == pytest.approx(0.012)
        assert got['kafka_eos_precommit_seconds_sum{pipeline="p"}'] == pytest.approx(0.04)
        assert got[f'kafka_eos_open_transactions{{{d}}}'] == 2
        assert got[f'kafka_eos_oldest_open_transaction_seconds{{{d}}}'] == 61.5
        assert got[f'kafka_eos_oldest_open_transaction_timeout_seconds{{{d}}}'] == 900
        assert got[f'kafka_eos_decided_uncommitted_transactions{{{d}}}'] == 1
        assert got[f'kafka_eos_oldest_decided_uncommitted_seconds{{{d}}}'] == 40
        assert got['kafka_eos_output_held_back_records{exporter="driver",partition="0",pipeline="p",topic="out"}'] == 7
        assert got['kafka_eos_output_held_back_seconds{exporter="driver",partition="0",pipeline="p",topic="out"}'] == 30
        assert got['kafka_eos_output_held_back_seconds{exporter="driver",partition="1",pipeline="p",topic="out"}'] == 0
        assert got['kafka_eos_decision_state{exporter="driver",pipeline="p",state="decided-pending"}'] == 1
        assert got['kafka_eos_decision_state{exporter="driver",pipeline="p",state="committed"}'] == 0
        assert got[f'kafka_eos_decision_batch{{{d}}}'] == 5
        assert got[f'kafka_eos_probe_last_success_timestamp_seconds{{{d},probe="output"}}'] > 1.7e9
    finally:
        metrics.close()


def test_held_back_time_counts_while_the_lso_stands_still():
    clock = HeldClock()
    tp = ("out", 0)
    assert clock.observe({tp: 10}, {tp: 10}, 100.0) == ({tp: 0}, {tp: 0.0})
    assert clock.observe({tp: 10}, {tp: 14}, 115.0) == ({tp: 4}, {tp: 0.0}), "first seen held"
    assert clock.observe({tp: 10}, {tp: 20}, 130.0) == ({tp: 10}, {tp: 15.0}), "same LSO: held 15 s"
    assert clock.observe({tp: 14}, {tp: 25}, 145.0) == ({tp: 11}, {tp: 0.0}), "the LSO moved: a new hold"
    assert clock.observe({tp: 25}, {tp: 25}, 160.0) == ({tp: 0}, {tp: 0.0})
    assert clock.observe({tp: 25}, {}, 175.0) == ({}, {}), "a partition not answered both ways is left out"


def test_a_failing_sample_is_counted_and_the_last_facts_stay():
    published, failures = [], []
    answers = iter([OutputFacts(0, 0.0, 0.0), TimeoutError("broker down")])

    def sample() -> OutputFacts:
        answer = next(answers)
        if isinstance(answer, BaseException):
            raise answer
        return answer
    probe = OperatorProbe(sample, published.append, failures.append, interval_s=60)
    probe.once()
    probe.once()
    assert len(published) == 1 and [type(f) for f in failures] == [TimeoutError]


def test_the_next_sample_is_due_when_next_in_says_never_later_than_the_interval_and_a_failure_resets_it():
    answers = iter([3.0, 500.0, TimeoutError("broker down")])

    def sample() -> float:
        answer = next(answers)
        if isinstance(answer, BaseException):
            raise answer
        return answer
    probe = OperatorProbe(sample, lambda facts: None, lambda exc: None, interval_s=15, next_in=lambda due: due)
    probe.once()
    assert probe._due_in == 3.0
    probe.once()
    assert probe._due_in == 15.0
    probe.once()
    assert probe._due_in == 15.0


def test_the_probe_samples_the_pipelines_output_topics(tmp_path):
    from tests.factories import load, valid
    data = valid(tmp_path)
    data["errors"] = {**data.get("errors", {}), "dlq_topic": "orders-dlq"}
    cfg, _ = load(tmp_path, data)
    assert output_topics(cfg) == tuple(sorted({cfg.sink.topic, "orders-dlq"}))


def test_sample_interval_is_a_whole_number_of_seconds_from_one(tmp_path):
    from tests.factories import load, valid
    data = valid(tmp_path)
    data["metrics"] = {"sample_interval_s": 2}
    cfg, _ = load(tmp_path, data)
    assert cfg.metrics is not None and cfg.metrics.sample_interval_s == 2
    data["metrics"] = {}
    cfg, _ = load(tmp_path, data)
    assert cfg.metrics is not None and cfg.metrics.sample_interval_s == 15
    data["metrics"] = {"sample_interval_s": 0}
    _, problems = load(tmp_path, data)
    assert any("sample_interval_s" in str(p) and "at least 1" in str(p) for p in problems), problems


def test_verify_runs_become_a_counter_by_outcome_and_the_newest_verified_batch(tmp_path):
    from kafka_eos.connectors.operate.operator_probe import OutputSampler
    from kafka_eos.txn.log.verify_runs import record_run, runs_since
    log = str(tmp_path / "log")
    record_run(log, {"verified": [1, 2]}, 2, None, at_ms=1_000)  # before the run started: not counted
    sampler = OutputSampler.__new__(OutputSampler)  # only its verify-run reading, no cluster
    sampler.sink, sampler._verified_seen_ms, sampler._latest_verify = SimpleNamespace(log_location=log), 5_000, None
    assert sampler._verify_runs() == () and sampler._latest_verify.newest_verified == 2
    record_run(log, {"verified": [3, 4], "failed": [5], "cannot be verified": [6]}, 4,
               {"batch": 5, "topic": "out", "partition": 0, "offset": 7}, at_ms=9_000)
    new = sampler._verify_runs()
    assert [r.at_ms for r in new] == [9_000] and sampler._verify_runs() == ()
    metrics = PrometheusMetrics("p", 0)
    d = 'exporter="driver"'
    try:
        metrics.gauges.expect("output")
        assert scrape(metrics.port)[f'kafka_eos_verify_batches_total{{{d},outcome="failed",pipeline="p"}}'] == 0
        metrics.gauges.output(OutputFacts(0, 0.0, 0.0, verify_runs=new, latest_verify=runs_since(log)[-1]))
        got = scrape(metrics.port)
        assert got[f'kafka_eos_verify_batches_total{{{d},outcome="verified",pipeline="p"}}'] == 2
        assert got[f'kafka_eos_verify_batches_total{{{d},outcome="failed",pipeline="p"}}'] == 1
        assert got[f'kafka_eos_verify_batches_total{{{d},outcome="unverifiable",pipeline="p"}}'] == 1
        assert got[f'kafka_eos_verify_newest_verified_batch{{{d},pipeline="p"}}'] == 4
        assert got[f'kafka_eos_verify_last_run_timestamp_seconds{{{d},pipeline="p"}}'] == 9.0
    finally:
        metrics.close()
