"""``bench/k2k_job.py`` with the bytes kept out of the JVM (issue 68), its arguments: with the
source option ``emit=valueRefs`` the sink is given the source's options (``source.*``) and reads
the values back; without it the source is ``kafka-eos-novalue`` (``size_bytes_hooks``: every
value null). The query is k2k_job's (``key``, ``value`` to a kafka-eos sink)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).parent))
import k2k_job  # noqa: E402  (the script's directory: spark-submit runs this file, not the package)
import size_bytes_hooks  # noqa: E402


def start(spark: SparkSession, a, source: str, output: str, checkpoint: str, source_format: str):
    options = {"kafka.bootstrap.servers": a.bootstrap, "subscribe": source, "startingOffsets": "earliest",
               **({"maxOffsetsPerTrigger": str(a.max_offsets)} if a.max_offsets else {}), **k2k_job._pairs(a.source_option)}
    frame = spark.readStream.format(source_format).options(**options).load().selectExpr("key", "value")
    writer = frame.writeStream.format("kafka-eos").option("checkpointLocation", checkpoint)
    if options.get("emit") == "valueRefs":
        writer = writer.options(**{f"source.{k}": v for k, v in options.items()})
    writer = (writer.options(**k2k_job._pairs(a.sink_option)).option("kafka.bootstrap.servers", a.bootstrap)
              .option("topic", output).option("transactional.id.prefix", f"bench-{Path(checkpoint).name}-{time.time_ns()}")
              .option("guarantee", a.guarantee).option("kafka.transaction.timeout.ms", 300000)
              .option("trigger.interval.ms", int(a.trigger_seconds * 1000)))
    return writer.trigger(processingTime=f"{a.trigger_seconds} seconds").start()


def main() -> None:
    a = k2k_job.parse()
    novalue = k2k_job._pairs(a.source_option).get("emit") != "valueRefs"
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    from pyspark import cloudpickle

    from kafka_eos import connectors
    connectors.register(spark)
    source_format = "kafka-eos"
    if novalue:
        cloudpickle.register_pickle_by_value(size_bytes_hooks)
        size_bytes_hooks.register(spark)
        source_format = size_bytes_hooks.NAME
    root = f"{a.checkpoint}/run-{os.getpid()}"
    if a.warmup_input:
        k2k_job.run_until(start(spark, a, a.warmup_input, a.warmup_output, root + "/warmup", source_format),
                          a.warmup_records)
    result = k2k_job.run_until(start(spark, a, a.input, a.output, root + "/main", source_format), a.records)
    result.update({"source": source_format, "sink": "kafka-eos", "guarantee": a.guarantee,
                   "source_options": k2k_job._pairs(a.source_option), "sink_options": k2k_job._pairs(a.sink_option)})
    result["sink_log"] = k2k_job.sink_metrics(root + "/main")
    print("BENCH " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
