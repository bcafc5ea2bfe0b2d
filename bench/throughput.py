"""Kafka -> Kafka throughput on one prepared input topic: kafka-eos exactly-once, kafka-eos
at-least-once, Spark's built-in ``kafka`` source + sink, and the plain-Python ceiling.

Every Spark run is its own ``spark-submit`` (local[2], trigger 5 s, ``bench/k2k_job.py``) over
the same input topic; each first runs a warm-up query over a small topic in the same JVM, then
the timed query (first batch start -> last batch end). Each run writes a fresh output topic,
checked afterwards to hold at least every input record.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.common import produce_bulk, run_job
from integration_tests.kafka_tools import committed_end_offsets, create_topic, unique

JOB = Path(__file__).with_name("k2k_job.py")
WARMUP_RECORDS = 100_000
PARTITIONS = 4


@dataclass(frozen=True)
class Input:
    """An input topic of ``records`` values of ``size`` bytes, and its warm-up topic."""
    bootstrap: str
    topic: str
    warmup: str
    records: int
    size: int
    produce_s: float


def prepare_input(bootstrap: str, records: int, size: int, warmup: int = WARMUP_RECORDS) -> Input:
    topic = create_topic(bootstrap, unique(f"bench-in-{size}"), PARTITIONS)
    warm = create_topic(bootstrap, unique(f"bench-warm-{size}"), PARTITIONS)
    produce_s = produce_bulk(bootstrap, topic, records, size)
    produce_bulk(bootstrap, warm, warmup, size)
    return Input(bootstrap, topic, warm, records, size, round(produce_s, 2))


def spark_run(inp: Input, source: str, sink: str, guarantee: str = "exactly_once",
              sample_memory: bool = False, trigger_s: float = 5) -> dict:
    """One timed Spark run from ``inp`` (formats ``kafka-eos`` / ``kafka``; sink also ``noop``)."""
    args = ["--bootstrap", inp.bootstrap, "--input", inp.topic, "--source-format", source, "--sink-format", sink,
            "--records", str(inp.records), "--trigger-seconds", str(trigger_s), "--guarantee", guarantee,
            "--warmup-input", inp.warmup, "--warmup-records", str(WARMUP_RECORDS)]
    out = ""
    if sink != "noop":
        out = create_topic(inp.bootstrap, unique(f"out-{sink}"), PARTITIONS)
        args += ["--output", out, "--warmup-output", create_topic(inp.bootstrap, unique("warm-out"), PARTITIONS)]
    with tempfile.TemporaryDirectory() as ck:
        result = run_job(JOB, [*args, "--checkpoint", ck], packages="kafka" in (source, sink),
                         sample_memory=sample_memory)
    if out:
        visible = sum(committed_end_offsets(inp.bootstrap, out).values())
        if visible < inp.records:
            raise RuntimeError(f"{source}->{sink}: output {out} ends at {visible} < {inp.records} records")
        result["output_end_offsets"] = visible
    return result


def suite(inp: Input) -> dict:
    """The four systems of the comparison on ``inp``, and their ratios (kafka-eos EOS / other)."""
    from bench.ceiling import python_ceiling
    runs = {
        "eos": spark_run(inp, "kafka-eos", "kafka-eos", sample_memory=True),
        "eos_alo": spark_run(inp, "kafka-eos", "kafka-eos", guarantee="at_least_once"),
        "spark_native": spark_run(inp, "kafka", "kafka", sample_memory=True),
        "python_ceiling": python_ceiling(inp),
    }
    eos = runs["eos"]["records_per_s"]
    runs["ratios"] = {"eos_vs_spark_native": round(eos / runs["spark_native"]["records_per_s"], 3),
                      "eos_vs_eos_alo": round(eos / runs["eos_alo"]["records_per_s"], 3),
                      "eos_vs_python_ceiling": round(eos / runs["python_ceiling"]["records_per_s"], 3)}
    runs["input"] = {"topic": inp.topic, "records": inp.records, "record_bytes": inp.size,
                     "partitions": PARTITIONS, "produce_s": inp.produce_s, "warmup_records": WARMUP_RECORDS}
    return runs


def breakdown(inp: Input) -> dict:
    """Where the time goes: each source alone (noop sink) and the mixed source/sink pairs."""
    pairs = {"eos_source_noop_sink": ("kafka-eos", "noop"), "native_source_noop_sink": ("kafka", "noop"),
             "eos_source_native_sink": ("kafka-eos", "kafka"), "native_source_eos_sink": ("kafka", "kafka-eos")}
    return {name: spark_run(inp, source, sink) for name, (source, sink) in pairs.items()}
