"""A Kafka -> kafka-eos source -> transform -> kafka-eos sink job, run by spark-submit in tests.

The transform keeps the id and marks the value: value "17" -> "out-17", key unchanged. With
``--emit-ranges`` the records are copied as they are (source option emit=offsetRanges: the sink
reads them, given the source's options as ``source.*``).
"""
from __future__ import annotations

import argparse

from pyspark.sql import SparkSession

from kafka_eos import connectors


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--max-offsets", type=int, default=0)
    p.add_argument("--starting-offsets", default="earliest", help="source option startingOffsets")
    p.add_argument("--trigger", default="available_now", help="available_now or seconds")
    p.add_argument("--run-seconds", type=float, default=0, help="with a processing-time trigger")
    p.add_argument("--stop-file", default="", help="with a processing-time trigger: stop when this file exists")
    p.add_argument("--fault", default="")
    p.add_argument("--fault-dir", default="")
    p.add_argument("--transaction-timeout-ms", type=int, default=300_000)
    p.add_argument("--repartition", type=int, default=0)
    p.add_argument("--layout", default="", choices=["", "rand"],
                   help="rand: repartition(4) on a rand()-based column (a non-deterministic replay layout)")
    p.add_argument("--sink-log-location", default="", help="sink option sinkLogLocation (default: beside the checkpoint)")
    p.add_argument("--sink-format", default="kafka-eos", choices=["kafka-eos", "kafka"],
                   help="kafka: Spark's built-in Kafka sink (needs its jars; for comparisons)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for the session (repeatable), e.g. spark.speculation=true")
    p.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a kafka-eos source option (repeatable), e.g. maxTasksPerBatch=2")
    p.add_argument("--emit-ranges", action="store_true", help="source emit=offsetRanges, the sink reads the records")
    p.add_argument("--remote", default="", help="sc://host:port: run as a client of this Spark Connect server "
                   "(with plain python, not spark-submit)")
    a = p.parse_args()

    builder = SparkSession.builder.remote(a.remote) if a.remote else SparkSession.builder
    for setting in a.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    connectors.register(spark)
    source = {"kafka.bootstrap.servers": a.bootstrap, "subscribe": a.input, "startingOffsets": a.starting_offsets,
              **({"maxOffsetsPerTrigger": str(a.max_offsets)} if a.max_offsets else {}),
              **dict(option.split("=", 1) for option in a.source_option),
              **({"emit": "offsetRanges"} if a.emit_ranges else {}),
              "checkpointLocation": a.checkpoint}  # pyspark 4.0/4.1: where the source resumes
    if a.trigger == "available_now":
        source = connectors.available_now_options(spark, source)
    reader = spark.readStream.format("kafka-eos").options(**source)
    df = reader.load()
    if not a.emit_ranges:
        df = df.selectExpr("key", "CONCAT('out-', CAST(value AS STRING)) AS value")
    if a.repartition:
        df = df.repartition(a.repartition, "key")
    if a.layout == "rand":
        df = df.selectExpr("key", "value", "CAST(FLOOR(rand() * 1000) AS INT) AS r").repartition(4, "r").drop("r")
    writer = (df.writeStream.format(a.sink_format).option("kafka.bootstrap.servers", a.bootstrap)
              .option("topic", a.output).option("transactional.id.prefix", a.prefix)
              .option("checkpointLocation", a.checkpoint)
              .option("kafka.transaction.timeout.ms", a.transaction_timeout_ms)
              .option("batch.margin.ms", 1000))
    if a.emit_ranges:
        writer = writer.options(**{f"source.{k}": v for k, v in source.items()})
    if a.sink_log_location:
        writer = writer.option("sinkLogLocation", a.sink_log_location)
    if a.fault:
        writer = writer.option("faultInjection", a.fault).option("faultInjectionDir", a.fault_dir)
    if a.trigger == "available_now":
        query = writer.trigger(**connectors.available_now_trigger()).start()
        connectors.await_available_now(query)
    else:
        query = writer.trigger(processingTime=f"{a.trigger} seconds").start()
        if a.stop_file:
            import os
            import time
            deadline = time.monotonic() + (a.run_seconds or float("inf"))
            while query.isActive and not os.path.exists(a.stop_file) and time.monotonic() < deadline:
                query.awaitTermination(1)
        else:
            query.awaitTermination(a.run_seconds or None)
        query.stop()
    if query.exception():
        raise SystemExit(f"query failed: {query.exception()}")
    print("job: done")
    spark.stop()


if __name__ == "__main__":
    main()
