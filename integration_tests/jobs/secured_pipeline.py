"""The test job of ``eos_pipeline.py`` on a secured cluster, run by spark-submit in tests.

The kafka.* security options (password included) come from the environment variable
``KAFKA_EOS_TEST_KAFKA_SECURITY`` (JSON), never from the command line. The transform keeps the
key and marks the value: value "17" -> "out-17".
"""
from __future__ import annotations

import argparse
import json
import os

from pyspark.sql import SparkSession

from kafka_eos import connectors


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("--bootstrap", "--input", "--output", "--checkpoint", "--prefix"):
        p.add_argument(name, required=True)
    p.add_argument("--max-offsets", type=int, default=0)
    p.add_argument("--fault", default="")
    p.add_argument("--fault-dir", default="")
    a = p.parse_args()
    security = json.loads(os.environ["KAFKA_EOS_TEST_KAFKA_SECURITY"])

    spark = SparkSession.builder.getOrCreate()
    connectors.register(spark)
    source = {**security, "kafka.bootstrap.servers": a.bootstrap, "subscribe": a.input, "startingOffsets": "earliest",
              "checkpointLocation": a.checkpoint,  # pyspark 4.0/4.1: where the source resumes
              **({"maxOffsetsPerTrigger": str(a.max_offsets)} if a.max_offsets else {})}
    reader = spark.readStream.format("kafka-eos").options(**connectors.available_now_options(spark, source))
    df = reader.load().selectExpr("key", "CONCAT('out-', CAST(value AS STRING)) AS value")
    writer = (df.writeStream.format("kafka-eos").options(**security).option("kafka.bootstrap.servers", a.bootstrap)
              .option("topic", a.output).option("transactional.id.prefix", a.prefix)
              .option("checkpointLocation", a.checkpoint)
              .option("kafka.transaction.timeout.ms", 300_000).option("batch.margin.ms", 1000))
    if a.fault:
        writer = writer.option("faultInjection", a.fault).option("faultInjectionDir", a.fault_dir)
    query = writer.trigger(**connectors.available_now_trigger()).start()
    connectors.await_available_now(query)
    if query.exception():
        raise SystemExit(f"query failed: {query.exception()}")
    print("job: done")
    spark.stop()


if __name__ == "__main__":
    main()
