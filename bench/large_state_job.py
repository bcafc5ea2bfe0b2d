"""The large-state cell's peer (``bench.large_state``): the same SQL on Spark's own ``kafka`` source and
sink, run by spark-submit until the records available at its start are processed (availableNow).

The source's JSON values are parsed in the JVM (``from_json``) into the view ``source`` that the
kafka-eos SQL reads (``value`` struct and the watermarked ``event_time``); the output's value is
the SQL's ``value`` as JSON. Prints ``BENCH {"batches": [[rows, ms, start_s], ...]}``.
"""
from __future__ import annotations

import argparse
import json
import time
from datetime import datetime

from pyspark.sql import SparkSession


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    for name in ("bootstrap", "topics", "output", "checkpoint", "sql", "delay"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--max-offsets", type=int, default=0)
    p.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--sink-option", action="append", default=[], metavar="KEY=VALUE")
    return p.parse_args(argv)


def _pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def main() -> None:
    a = parse()
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    options = {"kafka.bootstrap.servers": a.bootstrap, "subscribe": a.topics, "startingOffsets": "earliest",
               **({"maxOffsetsPerTrigger": str(a.max_offsets)} if a.max_offsets else {}), **_pairs(a.source_option)}
    (spark.readStream.format("kafka").options(**options).load()
     .selectExpr("from_json(CAST(value AS STRING), 'id BIGINT, key STRING, at BIGINT') AS value")
     .selectExpr("value", "timestamp_millis(value.at) AS event_time")
     .withWatermark("event_time", a.delay).createOrReplaceTempView("source"))
    query = (spark.sql(a.sql).selectExpr("CAST(key AS STRING) AS key", "to_json(value) AS value")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", a.bootstrap).option("topic", a.output)
             .options(**_pairs(a.sink_option)).option("checkpointLocation", a.checkpoint).outputMode("append")
             .trigger(availableNow=True).start())
    seen: dict[int, dict] = {}
    while query.isActive:
        seen.update({p["batchId"]: p for p in query.recentProgress})
        time.sleep(0.5)
    if query.exception():
        raise SystemExit(str(query.exception()))
    seen.update({p["batchId"]: p for p in query.recentProgress})
    batches = [[p["numInputRows"], p["durationMs"].get("triggerExecution", 0),
                datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()]
               for _, p in sorted(seen.items())]
    print("BENCH " + json.dumps({"batches": batches}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
