"""Benchmark job: Kafka -> Spark -> Kafka with kafka-eos or Spark's built-in ``kafka`` format.

Runs a streaming query with a processing-time trigger until ``--records`` input rows are
processed, then prints one JSON line ``BENCH {...}``: every batch (id, rows, start, Spark's
per-phase durations), the steady-state rate (the batches after the first one with rows: their
rows / the sum of their ``triggerExecution`` times, so the idle wait for the next trigger is not
counted), the wall rate (first batch start -> last batch end) and, for a kafka-eos sink, the
sink log's commit metrics. ``--max-offsets`` (maxOffsetsPerTrigger) splits the input into
several batches.

``--source-option`` / ``--sink-option KEY=VALUE`` add reader / writer options (the tuned
Spark ``kafka`` peer). ``--profile DIR`` runs the timed query on ``kafka-eos-profiled``
(``bench/profile_hooks.py``: stage timings per task under DIR).

``--format`` sets both ends; ``--source-format`` / ``--sink-format`` mix them (``noop`` sink:
Spark's no-op sink, to time the source alone). ``--guarantee at_least_once`` runs the kafka-eos
sink without transactions. ``--warmup-input`` first runs the same pipeline over a small topic
(own output and checkpoint) so JIT compilation and Python worker start-up are not timed.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from datetime import datetime
from pathlib import Path

from pyspark.sql import SparkSession

FORMATS = ("kafka-eos", "kafka", "noop")
PROFILED = "kafka-eos-profiled"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    for name in ("bootstrap", "input", "checkpoint"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--output", default="")
    p.add_argument("--format", choices=FORMATS[:2], help="source and sink format")
    p.add_argument("--source-format", choices=FORMATS[:2])
    p.add_argument("--sink-format", choices=FORMATS)
    p.add_argument("--records", type=int, required=True)
    p.add_argument("--trigger-seconds", type=float, default=5)
    p.add_argument("--max-offsets", type=int, default=0)
    p.add_argument("--guarantee", default="exactly_once", choices=("exactly_once", "at_least_once"))
    p.add_argument("--warmup-input", default="")
    p.add_argument("--warmup-output", default="")
    p.add_argument("--warmup-records", type=int, default=0)
    p.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--sink-option", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--profile", default="", help="directory for the stage timings of the timed query")
    p.add_argument("--resume", action="store_true",
                   help="use --checkpoint as the query's checkpoint (a restart resumes it), not a fresh one per run")
    a = p.parse_args(argv)
    a.source_format = a.source_format or a.format
    a.sink_format = a.sink_format or a.format
    if not a.source_format or not a.sink_format:
        p.error("give --format or both --source-format and --sink-format")
    return a


def _pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def emits_ranges(a: argparse.Namespace) -> bool:
    """Whether the source option emit=offsetRanges is given (rows are offset ranges)."""
    return _pairs(a.source_option).get("emit") == "offsetRanges"


def start(spark: SparkSession, a: argparse.Namespace, source: str, output: str, checkpoint: str,
          profiled: bool = False):
    source_format = PROFILED if profiled and a.source_format == "kafka-eos" else a.source_format
    sink_format = PROFILED if profiled and a.sink_format == "kafka-eos" else a.sink_format
    source_options = {"kafka.bootstrap.servers": a.bootstrap, "subscribe": source, "startingOffsets": "earliest",
                      **({"maxOffsetsPerTrigger": str(a.max_offsets)} if a.max_offsets else {}),
                      **_pairs(a.source_option)}
    frame = spark.readStream.format(source_format).options(**source_options).load()
    ranges = emits_ranges(a)  # the kafka-eos sink reads the records itself
    writer = (frame if ranges else frame.selectExpr("key", "value")).writeStream.format(sink_format)
    writer = writer.option("checkpointLocation", checkpoint).options(**_pairs(a.sink_option))
    if ranges:
        writer = writer.options(**{f"source.{k}": v for k, v in source_options.items()})
    if a.sink_format != "noop":
        writer = writer.option("kafka.bootstrap.servers", a.bootstrap).option("topic", output)
    if a.sink_format == "kafka-eos":
        prefix = f"bench-{Path(checkpoint).name}" + ("" if a.resume else f"-{time.time_ns()}")  # a resume keeps it
        writer = (writer.option("transactional.id.prefix", prefix)
                  .option("guarantee", a.guarantee).option("kafka.transaction.timeout.ms", 300000)
                  .option("trigger.interval.ms", int(a.trigger_seconds * 1000)))
    return writer.trigger(processingTime=f"{a.trigger_seconds} seconds").start()


def _epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def offsets_read(progress) -> int:
    """Offsets a kafka-eos source batch advanced (its records, on an input without transactions):
    with emit=offsetRanges Spark counts one input row per range, not per record."""
    from kafka_eos.offsets import model
    source = progress["sources"][0]
    start, end = (json.loads(o) if isinstance(o, str) else o for o in (source["startOffset"], source["endOffset"]))
    first = start is None or model.is_initial(start)
    begin = (model.planned_start(end) if first else None) or ({} if start is None else model.decode(start))
    return sum(o - begin.get(tp, 0) for tp, o in model.decode(end).items())


def with_records(progress: list, ranges: bool) -> list[dict]:
    """The batches that read something, each a dict with its records as ``numInputRows``."""
    batches = [dict(p) for p in progress]  # StreamingQueryProgress is a dict
    if ranges:
        for b in batches:
            b["numInputRows"] = offsets_read(b)
    return [b for b in batches if b["numInputRows"]]


def run_until(query, records: int, ranges: bool = False) -> dict:
    """Wait until ``records`` rows went through ``query``; stop it; summarise its progress."""
    seen: dict[int, dict] = {}  # Spark keeps only the last 100 progress updates: a long run has more batches
    while True:
        if query.exception():
            raise SystemExit(str(query.exception()))
        seen.update({p["batchId"]: p for p in with_records(query.recentProgress, ranges)})
        batches = [seen[b] for b in sorted(seen)]
        if sum(p["numInputRows"] for p in batches) >= records:
            break
        time.sleep(0.1)
    query.stop()
    first_start = min(_epoch(p["timestamp"]) for p in batches)
    last_end = max(_epoch(p["timestamp"]) + p["durationMs"]["triggerExecution"] / 1000 for p in batches)
    largest = max(batches, key=lambda p: p["numInputRows"])
    records = sum(p["numInputRows"] for p in batches)
    steady = batches[1:] or batches  # the first batch (JIT, worker start, metadata) is not timed
    steady_s = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
    return {"records": records, "batches": len(batches), "elapsed_s": round(last_end - first_start, 3),
            "wall_records_per_s": round(records / (last_end - first_start)),
            "steady_batches": len(steady) if len(batches) > 1 else 0,
            "steady_records": sum(p["numInputRows"] for p in steady), "steady_s": round(steady_s, 3),
            "records_per_s": round(sum(p["numInputRows"] for p in steady) / steady_s),
            "largest_batch_ms": largest["durationMs"],
            "per_batch": [{"batch": p["batchId"], "rows": p["numInputRows"], "start": p["timestamp"],
                           "start_s": _epoch(p["timestamp"]), "ms": p["durationMs"]} for p in batches]}


def sink_metrics(checkpoint: str) -> dict:
    """Commit metrics of the kafka-eos sink log (one file per batch)."""
    logs = [json.loads(p.read_text()) for p in (Path(checkpoint) / "kafka-eos-sink").glob("[0-9]*.json")]
    metrics = [r["metrics"] for r in logs if r.get("metrics")]
    return {"commit_ms": [m["commit_ms"] for m in metrics],
            "precommit_max_ms": [m["precommit_max_ms"] for m in metrics],
            "transactions": [m["transactions"] for m in metrics]}


def _register_profiled(spark: SparkSession, directory: str) -> None:
    """Register the profiled source/sink; its module is pickled by value (workers cannot import it)."""
    import sys

    from pyspark import cloudpickle
    sys.path.insert(0, str(Path(__file__).parent))
    import profile_hooks
    cloudpickle.register_pickle_by_value(profile_hooks)
    profile_hooks.register(spark, directory)


def main() -> None:
    a = parse()
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if "kafka-eos" in (a.source_format, a.sink_format):
        from kafka_eos import connectors
        connectors.register(spark)
    root = a.checkpoint if a.resume else f"{a.checkpoint}/run-{os.getpid()}"  # a retried job starts afresh
    ranges = emits_ranges(a)
    warmup = None
    if a.warmup_input:
        started = time.monotonic()
        run_until(start(spark, a, a.warmup_input, a.warmup_output, root + "/warmup"), a.warmup_records, ranges)
        warmup = round(time.monotonic() - started, 2)
    if a.profile:
        _register_profiled(spark, a.profile)
    main_checkpoint = root if a.resume else root + "/main"
    result = run_until(start(spark, a, a.input, a.output, main_checkpoint, profiled=bool(a.profile)), a.records, ranges)
    result.update({"source": a.source_format, "sink": a.sink_format, "guarantee": a.guarantee,
                   "warmup_s": warmup, "source_options": _pairs(a.source_option),
                   "sink_options": _pairs(a.sink_option), "profiled": bool(a.profile)})
    if a.sink_format == "kafka-eos":
        result["sink_log"] = sink_metrics(main_checkpoint)
    print("BENCH " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
