"""Benchmark (issue 4), now a thin alias over the suite's modules: Kafka -> Kafka throughput of
kafka-eos exactly-once vs Spark's built-in kafka source + sink (at-least-once) on one broker,
and the 2PC commit latency per batch for 1, 8 and 64 output partitions. Writes
``bench/results/<date>-k2k.json``. The full suite (issue 6) is ``python -m bench.run``.

    python -m bench.kafka_to_kafka [--records 1000000]
"""
from __future__ import annotations

import argparse

from bench import commit, throughput
from bench.common import load_avg, write_result
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    load_before = load_avg()
    with LocalKafkaCluster() as cluster:
        inp = throughput.prepare_input(cluster.bootstrap, args.records, 100)
        eos = throughput.spark_run(inp, "kafka-eos", "kafka-eos")
        native = throughput.spark_run(inp, "kafka", "kafka")
        latency = commit.suite(cluster.bootstrap)
    ratio = round(eos["records_per_s"] / native["records_per_s"], 3)
    path = write_result("k2k", {"records": args.records, "record_bytes": 100, "trigger_s": 5, "eos": eos,
                                "spark_native": native, "ratios": {"eos_vs_spark_native": ratio},
                                "commit_ms": latency, "load_avg_1m": {"before": load_before, "after": load_avg()}})
    print(f"kafka-eos exactly-once: {eos['records_per_s']:,} rec/s; Spark kafka (at-least-once): "
          f"{native['records_per_s']:,} rec/s; ratio {ratio}")
    for p, lat in latency.items():
        print(f"commit latency, {p} output partitions: median {lat['median_ms']} ms, max {lat['max_ms']} ms "
              f"over {lat['batches']} batches")
    print(f"written {path}")


if __name__ == "__main__":
    main()
