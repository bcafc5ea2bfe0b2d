"""Benchmark (issue 3): read throughput of the kafka-eos source vs Spark's built-in ``kafka``
source on the same topic (1M x 100-byte records, same machine, one timed run each).

Each format runs in its own ``spark-submit`` (local[2]); both read the whole topic as a batch
and aggregate every column's worth of data (count, total value bytes, max offset), so neither
can skip deserialising records. A warm-up read of 200k records first loads and JIT-compiles
the JVM's Kafka path and starts the Python workers alike; only the full read is timed. The
1-minute load average before and after is recorded: on a shared machine it explains noise. Prints the ratio (kafka-eos / kafka,
higher is better; goal >= 0.8) and writes ``bench/results/<date>-source-read.json``.

    python -m bench.source_read [--records 1000000] [--partitions 2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def job(argv: list[str]) -> None:
    """Runs inside spark-submit: one warm-up read, then the timed full read; prints ``BENCH {...}``."""
    p = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "warmup-topic", "format"):
        p.add_argument(f"--{name}", required=True)
    a = p.parse_args(argv)
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if a.format == "kafka-eos":
        from kafka_eos import connectors
        connectors.register(spark)

    def read(topic: str) -> tuple[int, int, int, float]:
        started = time.perf_counter()
        df = (spark.read.format(a.format).option("kafka.bootstrap.servers", a.bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
        row = df.agg(F.count("*"), F.sum(F.length("value")), F.max("offset")).collect()[0]
        return int(row[0]), int(row[1] or 0), int(row[2] or 0), time.perf_counter() - started

    read(a.warmup_topic)
    rows, value_bytes, max_offset, elapsed = read(a.topic)
    print("BENCH " + json.dumps({"format": a.format, "rows": rows, "value_bytes": value_bytes,
                                 "max_offset": max_offset, "elapsed_s": round(elapsed, 3),
                                 "records_per_s": round(rows / elapsed)}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    from bench.common import produce_bulk, run_job, write_result
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    from integration_tests.kafka_tools import create_topic, unique

    with LocalKafkaCluster() as cluster:
        bootstrap = cluster.bootstrap
        topic = create_topic(bootstrap, unique("bench-read"), args.partitions)
        warmup = create_topic(bootstrap, unique("bench-warmup"), args.partitions)
        produce_s = produce_bulk(bootstrap, topic, args.records)
        produce_bulk(bootstrap, warmup, 200_000)
        common = ["--bootstrap", bootstrap, "--topic", topic, "--warmup-topic", warmup]
        script = Path(__file__).resolve()
        load_before = os.getloadavg()[0]
        eos = run_job(script, ["job", *common, "--format", "kafka-eos"])
        native = run_job(script, ["job", *common, "--format", "kafka"], packages=True)
        load_after = os.getloadavg()[0]
    for result in (eos, native):
        if result["rows"] != args.records:
            raise SystemExit(f"{result['format']} read {result['rows']} records, expected {args.records}")
    ratio = round(eos["records_per_s"] / native["records_per_s"], 3)
    path = write_result("source-read", {
        "records": args.records, "record_bytes": 100, "partitions": args.partitions, "master": "local[2]",
        "produce_s": round(produce_s, 2), "kafka_eos": eos, "spark_kafka": native,
        "ratio_eos_vs_spark_kafka": ratio, "goal": 0.8,
        "load_avg_1m": {"before": load_before, "after": load_after}})
    print(f"kafka-eos source: {eos['records_per_s']:,} rec/s ({eos['elapsed_s']} s); Spark kafka source: "
          f"{native['records_per_s']:,} rec/s ({native['elapsed_s']} s); ratio {ratio} (goal >= 0.8)")
    print(f"written {path}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "job":
        job(sys.argv[2:])
    else:
        main()
