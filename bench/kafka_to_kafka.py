"""Benchmark (issue 4): Kafka -> Kafka throughput, kafka-eos exactly-once vs Spark's built-in
kafka source + sink (at-least-once), same broker, one run; and 2PC commit latency per batch
with 1, 8 and 64 output partitions. Prints the ratios and writes bench/results/<date>-k2k.json.

    python -m bench.kafka_to_kafka [--records 1000000]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from bench.common import produce_bulk, run_job, write_result
from connectors.dev.local_kafka import LocalKafkaCluster
from integration_tests.kafka_tools import create_topic, unique

JOB = Path(__file__).with_name("k2k_job.py")


def throughput(bootstrap: str, source: str, records: int, fmt: str, partitions: int = 4) -> dict:
    out = create_topic(bootstrap, unique(f"out-{fmt}"), partitions)
    with tempfile.TemporaryDirectory() as ck:
        result = run_job(JOB, ["--bootstrap", bootstrap, "--input", source, "--output", out, "--checkpoint", ck,
                               "--format", fmt, "--records", str(records), "--trigger-seconds", "5"],
                         packages=fmt == "kafka")
    result["records_per_s"] = round(records / result["elapsed_s"])
    return result


def commit_latency(bootstrap: str, partitions: int, records: int = 200_000) -> dict:
    source = create_topic(bootstrap, unique("lat-in"), 2)
    produce_bulk(bootstrap, source, records)
    out = create_topic(bootstrap, unique("lat-out"), partitions)
    with tempfile.TemporaryDirectory() as ck:
        run_job(JOB, ["--bootstrap", bootstrap, "--input", source, "--output", out, "--checkpoint", ck,
                      "--format", "kafka-eos", "--records", str(records), "--trigger-seconds", "1",
                      "--max-offsets", str(records // 8)])
        logs = [json.loads(p.read_text()) for p in (Path(ck) / "kafka-eos-sink").glob("[0-9]*.json")]
    commits = [r["metrics"]["commit_ms"] for r in logs if r["metrics"].get("transactions")]
    return {"batches": len(commits), "median_ms": statistics.median(commits), "max_ms": max(commits)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    with LocalKafkaCluster() as cluster:
        bootstrap = cluster.bootstrap
        source = create_topic(bootstrap, unique("bench-in"), 4)
        produce_bulk(bootstrap, source, args.records)
        eos = throughput(bootstrap, source, args.records, "kafka-eos")
        native = throughput(bootstrap, source, args.records, "kafka")
        latency = {str(p): commit_latency(bootstrap, p) for p in (1, 8, 64)}
    ratio = round(eos["records_per_s"] / native["records_per_s"], 3)
    result = {"records": args.records, "record_bytes": 100, "trigger_s": 5,
              "eos": eos, "spark_native": native, "ratios": {"eos_vs_spark_native": ratio},
              "commit_ms": latency}
    path = write_result("k2k", result)
    print(f"kafka-eos exactly-once: {eos['records_per_s']:,} rec/s; Spark kafka (at-least-once): "
          f"{native['records_per_s']:,} rec/s; ratio {ratio}")
    for p, lat in latency.items():
        print(f"commit latency, {p} output partitions: median {lat['median_ms']} ms, max {lat['max_ms']} ms "
              f"over {lat['batches']} batches")
    print(f"written {path}")


if __name__ == "__main__":
    main()
