"""Benchmark job: Kafka -> Spark -> Kafka with either kafka-eos or Spark's built-in kafka format.

Runs with a processing-time trigger until ``--records`` input rows are processed, then prints
one JSON line ``BENCH {...}`` with the elapsed time (first batch start -> last batch end).
"""
from __future__ import annotations

import argparse
import json
import time

from pyspark.sql import SparkSession


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("bootstrap", "input", "output", "checkpoint", "format"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--records", type=int, required=True)
    p.add_argument("--trigger-seconds", type=float, default=5)
    p.add_argument("--max-offsets", type=int, default=0)
    p.add_argument("--guarantee", default="exactly_once")
    a = p.parse_args()
    spark = SparkSession.builder.getOrCreate()
    if a.format == "kafka-eos":
        import connectors
        connectors.register(spark)
    reader = (spark.readStream.format(a.format).option("kafka.bootstrap.servers", a.bootstrap)
              .option("subscribe", a.input).option("startingOffsets", "earliest"))
    if a.max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", a.max_offsets)
    df = reader.load().selectExpr("key", "value")
    writer = (df.writeStream.format(a.format).option("kafka.bootstrap.servers", a.bootstrap)
              .option("topic", a.output).option("checkpointLocation", a.checkpoint))
    if a.format == "kafka-eos":
        writer = writer.option("transactional.id.prefix", f"bench-{int(time.time())}")
        writer = writer.option("kafka.transaction.timeout.ms", 300000).option("trigger.interval.ms",
                                                                                int(a.trigger_seconds * 1000))
    query = writer.trigger(processingTime=f"{a.trigger_seconds} seconds").start()
    seen, processed, first_start, last_end = set(), 0, None, None
    while processed < a.records:
        if query.exception():
            raise SystemExit(str(query.exception()))
        progress = query.lastProgress
        if progress and progress["batchId"] not in seen:
            seen.add(progress["batchId"])
            rows = progress["numInputRows"]
            if rows:
                processed += rows
                ts = time.mktime(time.strptime(progress["timestamp"][:19], "%Y-%m-%dT%H:%M:%S"))
                ts += float("0." + progress["timestamp"][20:23])
                first_start = ts if first_start is None else first_start
                last_end = ts + progress["durationMs"]["triggerExecution"] / 1000
        time.sleep(0.1)
    query.stop()
    print("BENCH " + json.dumps({"format": a.format, "records": processed, "batches": len(seen),
                                 "elapsed_s": round(last_end - first_start, 3)}))
    spark.stop()


if __name__ == "__main__":
    main()
