"""The probes' facts as one pipeline's series, the same for the driver's endpoint and the monitor.

Invariants:
- Every series carries the pipeline and the exporter (``driver`` or ``monitor``) it was given.
- A probe's series are exported once that probe is expected (``expect``), with their
  before-the-first-sample values (counters 0, batches -1), so an alert on a missing probe can
  tell "none yet" from "not running".
- A failed sample changes nothing but the probe's failure counter: the last facts stay. A lag
  sample that answers from the ends last read (``LagFacts.error``) is published and counted failed.
- It is a listener: it reads facts and changes nothing anyone does.
"""
from __future__ import annotations

from kafka_eos.connectors.operate.lag import LagFacts
from kafka_eos.connectors.operate.operator_probe import OutputFacts

OUTPUT, LAG = "output", "lag"
DECISION_STATES = ("none", "committed", "decided-pending", "lost")
VERIFY_OUTCOMES = {"verified": "verified", "failed": "failed", "cannot be verified": "unverifiable"}


class ProbeGauges:
    """``ProbeGauges(made, pipeline, exporter)``: ``made`` is ``metric_table.register``'s result."""

    def __init__(self, made: dict[str, object], pipeline: str, exporter: str) -> None:
        self.m, self.pipeline, self.exporter = made, pipeline, exporter

    def _metric(self, name: str, *labels: str):
        """The series of ``name`` with ``labels`` between the pipeline and the exporter."""
        return self.m[name].labels(self.pipeline, *labels, self.exporter)  # type: ignore[attr-defined]

    def settings(self, batch_budget_s: float, sample_interval_s: float, stall_threshold_s: float) -> None:
        """The file's settings, and the stall threshold before the first lag sample (no batch known)."""
        self._metric("kafka_eos_batch_budget_seconds").set(batch_budget_s)
        self._metric("kafka_eos_sample_interval_seconds").set(sample_interval_s)
        self._metric("kafka_eos_stall_threshold_seconds").set(stall_threshold_s)

    def expect(self, probe: str) -> None:
        """Export ``probe``'s series before its first sample."""
        self._metric("kafka_eos_probe_failures_total", probe)
        if probe != OUTPUT:
            return
        self._metric("kafka_eos_decision_batch").set(-1)
        for outcome in VERIFY_OUTCOMES.values():
            self._metric("kafka_eos_verify_batches_total", outcome)
        self._metric("kafka_eos_verify_newest_verified_batch").set(-1)
        self._metric("kafka_eos_verify_last_run_timestamp_seconds").set(0)
        self._metric("kafka_eos_verify_last_run_failed_batches").set(0)

    def failed(self, probe: str, _error: BaseException | None = None) -> None:
        self._metric("kafka_eos_probe_failures_total", probe).inc()

    def _succeeded(self, probe: str) -> None:
        self._metric("kafka_eos_probe_last_success_timestamp_seconds", probe).set_to_current_time()

    def output(self, facts: OutputFacts) -> None:
        self._metric("kafka_eos_open_transactions").set(facts.open_transactions)
        self._metric("kafka_eos_oldest_open_transaction_seconds").set(facts.oldest_open_s)
        self._metric("kafka_eos_oldest_open_transaction_timeout_seconds").set(facts.oldest_timeout_s)
        self._metric("kafka_eos_decided_uncommitted_transactions").set(facts.decided_open)
        self._metric("kafka_eos_oldest_decided_uncommitted_seconds").set(facts.oldest_decided_s)
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
            self._metric("kafka_eos_verify_last_run_failed_batches").set(facts.latest_verify.count("failed"))
        if facts.follow is not None:
            self._metric("kafka_eos_verify_unverified_batches").set(facts.follow.unverified)
            self._metric("kafka_eos_verify_oldest_unverified_seconds").set(facts.follow.oldest_unverified_s)
            self._metric("kafka_eos_verify_aged_out_batches").set(facts.follow.aged_out)
            self._metric("kafka_eos_verify_follow_timestamp_seconds").set(facts.follow.at_ms / 1000)
            self._metric("kafka_eos_verify_follow_failed_batches").set(facts.follow.failed)
            self._metric("kafka_eos_verify_follow_unverifiable_batches").set(facts.follow.unverifiable)
        self._succeeded(OUTPUT)

    def lag(self, facts: LagFacts) -> None:
        for (topic, partition), lag in facts.partitions.items():
            self._metric("kafka_eos_offsets_behind", topic, str(partition)).set(lag.records)
            self._metric("kafka_eos_oldest_unread_record_seconds", topic, str(partition)).set(lag.seconds)
        if facts.last_commit_s is not None:
            self._metric("kafka_eos_last_commit_timestamp_seconds").set(facts.last_commit_s)
        self._metric("kafka_eos_input_waiting_seconds").set(facts.waiting_s)
        if facts.stall_threshold_s is not None:
            self._metric("kafka_eos_stall_threshold_seconds").set(facts.stall_threshold_s)
        if facts.error is None:
            self._succeeded(LAG)
        else:
            self.failed(LAG, facts.error)
