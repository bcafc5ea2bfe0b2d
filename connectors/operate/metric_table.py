"""Every metric kafka-eos exports: one ``Metric`` row each (name, type, labels, meaning, where it comes from).

The driver's endpoint (``metrics``) registers every row; the monitor (``monitor``) the rows its
probes update (``MONITORED``). The reference between ``<!-- metrics -->`` and ``<!-- /metrics -->``
in ``config/README.md`` is rendered from the rows (``render_reference``; a unit test fails when
they differ; regenerate with ``python -m kafka_eos.connectors.operate.metrics config/README.md``).

Invariants:
- A signal both the driver and the monitor export carries ``exporter`` (``driver`` or
  ``monitor``), so the two never collide and an alert can take whichever answers
  (``max by (pipeline)``); what only a running query knows (each batch, the run) has no such label.
- Each registry is built from these rows only, and has no process or platform collectors.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
COMMIT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
DRIVER, MONITOR = "driver", "monitor"
BATCH, RUN = "each batch (driver)", "the run (driver)"
PROBE = "output probe (every `metrics.sample_interval_s`; driver and monitor)"
LAG = "lag probe (every `metrics.sample_interval_s`; driver and monitor)"
SAMPLES = "each probe sample (driver and monitor)"
SETTINGS = "the pipeline file, at start (driver and monitor)"


@dataclass(frozen=True)
class Metric:
    name: str           # as exported (counters with their ``_total``)
    kind: str           # counter, gauge or histogram
    labels: tuple[str, ...]
    meaning: str
    source: str


P, TP = ("pipeline",), ("pipeline", "topic", "partition")
PE, TPE = ("pipeline", "exporter"), ("pipeline", "topic", "partition", "exporter")
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
           "transactions of a batch Spark gave up on); counted with the next batch. An abort ends a transaction "
           "under its own producer id and epoch and fences nobody; fencing comes from a transactional id "
           "initialized again (a straggling attempt on a reused id, a second run on the same checkpoint), and a "
           "decided transaction fenced or aborted on timeout is lost (`kafka_eos_decision_state{state=\"lost\"}`)",
           BATCH),
    Metric("kafka_eos_batch_duration_seconds", "histogram", P, "batch duration (Spark's)", BATCH),
    Metric("kafka_eos_precommit_seconds", "histogram", P, "the batch's slowest pre-commit (a task's flush "
           "until its transaction is ready)", BATCH),
    Metric("kafka_eos_commit_seconds", "histogram", P, "decision to committed: the batch's EndTxn round", BATCH),
    Metric("kafka_eos_last_committed_batch", "gauge", P, "the newest batch whose output was committed "
           "(-1: none yet)", BATCH),
    Metric("kafka_eos_offsets_behind", "gauge", TPE, "records between the pipeline's committed position (the "
           "end of the checkpoint's last committed batch) and the source partition's read_committed end, read "
           "from the brokers on the probe's timer: it grows while no batch commits", LAG),
    Metric("kafka_eos_oldest_unread_record_seconds", "gauge", TPE, "age of the oldest source record not "
           "committed yet: now minus the Kafka timestamp of the first committed record at the committed "
           "position (0: none unread)", LAG),
    Metric("kafka_eos_last_commit_timestamp_seconds", "gauge", PE, "Unix time of the newest batch commit (the "
           "sink log's record; at-least-once: when the probe first saw the checkpoint's newest committed batch); "
           "not exported before the first commit", LAG),
    Metric("kafka_eos_input_waiting_seconds", "gauge", PE, "how long source records have waited with no batch "
           "committed: since the later of the last commit and the first sample that found records behind (0: "
           "none behind); a stalled pipeline's grows past `kafka_eos_stall_threshold_seconds`", LAG),
    Metric("kafka_eos_stall_threshold_seconds", "gauge", PE, "how long input may wait with no batch committed, "
           "or a transaction hold output back, before the pipeline counts as stalled: the trigger interval + the "
           "larger of 30 s and 3 x the 95th percentile of its last 50 batches' durations (start to commit), plus, "
           "for a batch planned larger than usual, its records at the pipeline's rate (`txn/log/stall.py`); the "
           "threshold of KafkaEosNoBatchCommitted, KafkaEosOutputHeldBack and `kafka-eos status`", LAG),
    Metric("kafka_eos_batch_budget_seconds", "gauge", PE, "the trigger interval + `sink.batch_margin_ms`: the "
           "budget `transaction.timeout.ms` must exceed (the transaction-timeout rule); no alert uses it",
           SETTINGS),
    Metric("kafka_eos_sample_interval_seconds", "gauge", PE, "`metrics.sample_interval_s`: how often the probes "
           "sample", SETTINGS),
    Metric("kafka_eos_open_transactions", "gauge", PE, "Ongoing transactions under the sink's "
           "transactional-id prefix (every owner's)", PROBE),
    Metric("kafka_eos_oldest_open_transaction_seconds", "gauge", PE, "age of the oldest of them (0: none)", PROBE),
    Metric("kafka_eos_oldest_open_transaction_timeout_seconds", "gauge", PE, "its `transaction.timeout.ms`: "
           "the broker aborts it at that age (0: none open)", PROBE),
    Metric("kafka_eos_decided_uncommitted_transactions", "gauge", PE, "the newest decision's transactions "
           "still open: decided, not committed yet (a driver that died after its decision leaves them to the "
           "next start's commit)", PROBE),
    Metric("kafka_eos_oldest_decided_uncommitted_seconds", "gauge", PE, "age of the oldest of them (0: none)",
           PROBE),
    Metric("kafka_eos_output_held_back_records", "gauge", TPE, "records between an output partition's last "
           "stable offset and its high watermark: what `read_committed` readers cannot read yet", PROBE),
    Metric("kafka_eos_output_held_back_seconds", "gauge", TPE, "how long that partition's last stable offset "
           "has stood still while held, as this exporter's samples saw it (0: not held)", PROBE),
    Metric("kafka_eos_decision_state", "gauge", ("pipeline", "state", "exporter"), "1 for the state of the sink "
           "log's newest decision (`none`, `committed`, `decided-pending`, `lost`), 0 for the others", PROBE),
    Metric("kafka_eos_decision_batch", "gauge", PE, "the batch of that decision (-1: none)", PROBE),
    Metric("kafka_eos_verify_batches_total", "counter", ("pipeline", "outcome", "exporter"), "batches "
           "`kafka-eos verify` judged in runs recorded since this exporter started, by `outcome`: `verified`, "
           "`failed`, `unverifiable` (alert on `increase(...{outcome=\"failed\"}[1d]) > 0`)", PROBE),
    Metric("kafka_eos_verify_newest_verified_batch", "gauge", PE, "the newest batch the last recorded verify run "
           "verified (-1: none)", PROBE),
    Metric("kafka_eos_verify_last_run_timestamp_seconds", "gauge", PE, "Unix time of the last recorded verify run "
           "(0: none)", PROBE),
    Metric("kafka_eos_verify_last_run_failed_batches", "gauge", PE, "batches the last recorded verify run failed "
           "(0: none, or no run yet): the alert KafkaEosVerifyFailed; a later run that fails none clears it", PROBE),
    Metric("kafka_eos_verify_unverified_batches", "gauge", PE, "committed batches `kafka-eos verify --follow` has "
           "not judged yet (exported once a follower has recorded its state)", PROBE),
    Metric("kafka_eos_verify_oldest_unverified_seconds", "gauge", PE, "seconds since the commit of the oldest of "
           "them (0: none): the alert KafkaEosVerifyBehind", PROBE),
    Metric("kafka_eos_verify_aged_out_batches", "gauge", PE, "committed batches the sink log dropped before the "
           "follower judged them, over every run of it: must stay 0 (the alert KafkaEosVerifyAgedOut)", PROBE),
    Metric("kafka_eos_verify_follow_failed_batches", "gauge", PE, "batches the follower judged failed, over every "
           "run of it: the alert KafkaEosVerifyFailed fires for an hour after it grows", PROBE),
    Metric("kafka_eos_verify_follow_unverifiable_batches", "gauge", PE, "batches the follower judged `cannot be "
           "verified` (records deleted or compacted, no evidence), over every run of it", PROBE),
    Metric("kafka_eos_verify_follow_timestamp_seconds", "gauge", PE, "Unix time the follower last recorded its "
           "state (each round that judged a batch, else every 10 s)", PROBE),
    Metric("kafka_eos_probe_failures_total", "counter", ("pipeline", "probe", "exporter"), "probe samples that "
           "failed (a broker down or refusing), by `probe`: `output`, `lag`; the probe's gauges keep their last "
           "values", SAMPLES),
    Metric("kafka_eos_probe_last_success_timestamp_seconds", "gauge", ("pipeline", "probe", "exporter"), "Unix "
           "time of the probe's last sample that succeeded", SAMPLES),
    Metric("kafka_eos_run_start_timestamp_seconds", "gauge", P, "Unix time this run (driver process) started: "
           "an error that stops the query ends the run, so `changes()` of it counts restarts", RUN),
)
MONITORED = tuple(m for m in METRICS if m.source not in (BATCH, RUN))


def register(registry, rows: tuple[Metric, ...] = METRICS) -> dict[str, object]:
    """prometheus_client's metric of each row, in ``registry``, by name."""
    from prometheus_client import Counter, Gauge, Histogram
    made: dict[str, object] = {}
    for m in rows:
        labels = list(m.labels)
        if m.kind == "counter":
            made[m.name] = Counter(m.name.removesuffix("_total"), m.meaning, labels, registry=registry)
        elif m.kind == "gauge":
            made[m.name] = Gauge(m.name, m.meaning, labels, registry=registry)
        else:
            buckets = BUCKETS if m.name == "kafka_eos_batch_duration_seconds" else COMMIT_BUCKETS
            made[m.name] = Histogram(m.name, m.meaning, labels, buckets=buckets, registry=registry)
    return made


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
