"""2PC commit latency per batch of the kafka-eos sink, by number of output partitions.

For each output partition count, a kafka-eos pipeline (trigger 1 s, ``maxOffsetsPerTrigger``
so the input splits into ``batches`` batches) copies a 2-partition topic; each batch has one
transaction per Spark task, each spanning every output partition. ``commit_ms`` is the sink
log's measure of the driver's commit step (EndTxn of every pending transaction, in parallel),
per batch; ``precommit_ms`` is the slowest task's flush before it returned its handle.
"""
from __future__ import annotations

import statistics
import tempfile

from bench.common import produce_bulk, run_job
from bench.latency import percentile
from bench.throughput import JOB
from integration_tests.kafka_tools import create_topic, unique


def commit_latency(bootstrap: str, partitions: int, records: int = 200_000, batches: int = 16) -> dict:
    source = create_topic(bootstrap, unique("commit-in"), 2)
    produce_bulk(bootstrap, source, records)
    out = create_topic(bootstrap, unique("commit-out"), partitions)
    with tempfile.TemporaryDirectory() as ck:
        result = run_job(JOB, ["--bootstrap", bootstrap, "--input", source, "--output", out, "--checkpoint", ck,
                               "--format", "kafka-eos", "--records", str(records), "--trigger-seconds", "1",
                               "--max-offsets", str(records // batches)])
    log = result["sink_log"]
    commits = sorted(ms for ms, txns in zip(log["commit_ms"], log["transactions"]) if txns)
    precommits = sorted(ms for ms, txns in zip(log["precommit_max_ms"], log["transactions"]) if txns)
    return {"output_partitions": partitions, "batches": len(commits),
            "transactions_per_batch": max(log["transactions"], default=0),
            "median_ms": round(statistics.median(commits), 1), "p90_ms": round(percentile(commits, 90), 1),
            "max_ms": max(commits), "precommit_median_ms": round(statistics.median(precommits), 1)}


def suite(bootstrap: str, counts: tuple[int, ...] = (1, 8, 64), records: int = 200_000) -> dict:
    return {str(p): commit_latency(bootstrap, p, records) for p in counts}
