"""Kafka -> Kafka throughput on one prepared input topic, interleaved rounds (issue 14.1, 14.2).

Configurations (``CONFIGS``), each run once per round in this order, ``rounds`` times, all on
the same input topic (read from the beginning every time):
  eos             kafka-eos source + sink, exactly-once;
  eos_ranges      the same with the source option emit=offsetRanges: the sink reads the records;
  eos_alo         kafka-eos source + sink, at-least-once;
  spark_default   Spark's built-in ``kafka`` source + sink with the Java clients' defaults;
  spark_tuned     the same, producer tuned like the kafka-eos producer (``SPARK_TUNED_SINK``:
                  linger 5 ms, 1 MB batches, no compression; the Java client is idempotent with
                  acks=all by default, as kafka-eos forces) and the consumer's partition fetch
                  size of the kafka-eos source (``SPARK_TUNED_SOURCE``);
  python_ceiling  the plain confluent-kafka exactly-once loop (``bench.ceiling``).

Every Spark run is its own ``spark-submit`` (local[2], trigger 5 s, ``bench/k2k_job.py``): a
warm-up query over a small topic in the same JVM, then the timed query split by
``maxOffsetsPerTrigger`` into several batches; its rate is the steady state (batches after the
first). Before each run the machine is given time to settle (``bench.method.settle``); the
1-minute load average is recorded before and after. Each run writes a fresh output topic of as
many partitions as its input (``Input.partitions``), checked afterwards to hold at least every
input record. Both sources run one task per input partition (no ``minPartitions``). ``suite``
takes the configurations and the trigger, so the cells of ``bench.cells`` reuse it.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench.common import load_avg, produce_bulk, run_job
from bench.method import key_medians, round_ratios, summary
from integration_tests.kafka_tools import committed_end_offsets, create_topic, unique

JOB = Path(__file__).with_name("k2k_job.py")
WARMUP_RECORDS = 100_000
PARTITIONS = 4
CONFIGS = ("eos", "eos_ranges", "eos_alo", "spark_default", "spark_tuned", "python_ceiling")
PEERS = ("eos_alo", "spark_default", "spark_tuned", "python_ceiling")
MEMORY_SAMPLED = ("eos", "eos_ranges", "spark_default", "spark_tuned")  # first round only: sampling costs CPU
SPARK_TUNED_SINK = {"kafka.linger.ms": "5", "kafka.batch.size": "1000000", "kafka.compression.type": "none"}
# kafka-eos exactly-once with its batches read by at most as many tasks as local[2] has cores
EOS_TASKS_SOURCE = {"maxTasksPerBatch": "2"}
# kafka-eos exactly-once, the sink reading the records of the source's offset ranges itself
EOS_RANGES_SOURCE = {"emit": "offsetRanges"}
SPARK_TUNED_SOURCE = {"kafka.max.partition.fetch.bytes": "10485760"}
EXTRA_EOS = {"eos_tasks": EOS_TASKS_SOURCE, "eos_ranges": EOS_RANGES_SOURCE,
             "eos_ranges_tasks": {**EOS_RANGES_SOURCE, **EOS_TASKS_SOURCE}}
# kafka-eos exactly-once without the write evidence verify reads (issue 46: its cost)
EXTRA_EOS_SINK = {"eos_no_evidence": {"writeEvidence": "false"}}


@dataclass(frozen=True)
class Input:
    """An input topic of ``records`` values of ``size`` bytes, and its warm-up topic."""
    bootstrap: str
    topic: str
    warmup: str
    records: int
    size: int
    produce_s: float
    max_offsets: int = 0
    broker_pids: tuple[int, ...] = ()  # their CPU is counted with each run's (``bench.cpu``)
    partitions: int = PARTITIONS  # of the input; every run's output topic gets as many
    warmup_records: int = WARMUP_RECORDS  # of the warm-up topic (at most ``records``)


def prepare_input(bootstrap: str, records: int, size: int, max_offsets: int = 0,
                  warmup: int = WARMUP_RECORDS, broker_pids: tuple[int, ...] = (),
                  partitions: int = PARTITIONS) -> Input:
    """An input topic and a warm-up topic of ``partitions`` partitions, written once."""
    topic = create_topic(bootstrap, unique(f"bench-in-{size}-{partitions}p"), partitions)
    warm = create_topic(bootstrap, unique(f"bench-warm-{size}-{partitions}p"), partitions)
    produce_s = produce_bulk(bootstrap, topic, records, size)
    produce_bulk(bootstrap, warm, min(warmup, records), size)
    return Input(bootstrap, topic, warm, records, size, round(produce_s, 2), max_offsets, broker_pids, partitions,
                 min(warmup, records))


def spark_run(inp: Input, source: str, sink: str, guarantee: str = "exactly_once", sample_memory: bool = False,
              trigger_s: float = 5, source_options: dict | None = None, sink_options: dict | None = None,
              profile: str = "") -> dict:
    """One timed Spark run from ``inp`` (formats ``kafka-eos`` / ``kafka``)."""
    args = ["--bootstrap", inp.bootstrap, "--input", inp.topic, "--source-format", source, "--sink-format", sink,
            "--records", str(inp.records), "--trigger-seconds", str(trigger_s), "--guarantee", guarantee,
            "--max-offsets", str(inp.max_offsets), "--warmup-input", inp.warmup,
            "--warmup-records", str(min(inp.warmup_records, inp.records))]
    args += [f"--source-option={k}={v}" for k, v in (source_options or {}).items()]
    args += [f"--sink-option={k}={v}" for k, v in (sink_options or {}).items()]
    if profile:
        args += ["--profile", profile]
    out = create_topic(inp.bootstrap, unique(f"out-{sink}"), inp.partitions)
    args += ["--output", out, "--warmup-output", create_topic(inp.bootstrap, unique("warm-out"), inp.partitions)]
    with tempfile.TemporaryDirectory() as ck:
        result = run_job(JOB, [*args, "--checkpoint", ck], packages="kafka" in (source, sink),
                         sample_memory=sample_memory, broker_pids=inp.broker_pids)
    visible = sum(committed_end_offsets(inp.bootstrap, out).values())
    if visible < inp.records:
        raise RuntimeError(f"{source}->{sink}: output {out} ends at {visible} < {inp.records} records")
    result["output_end_offsets"] = visible
    return result


def run_config(inp: Input, name: str, sample_memory: bool = False, trigger_s: float = 5) -> dict:
    """One run of configuration ``name`` (see ``CONFIGS``; the Python loop has no trigger: one
    transaction per 5 s)."""
    if name == "python_ceiling":
        from bench.ceiling import python_ceiling
        return python_ceiling(inp)
    if name in ("eos", "eos_alo"):
        guarantee = "exactly_once" if name == "eos" else "at_least_once"
        return spark_run(inp, "kafka-eos", "kafka-eos", guarantee, sample_memory, trigger_s)
    if name in EXTRA_EOS or name in EXTRA_EOS_SINK:
        return spark_run(inp, "kafka-eos", "kafka-eos", "exactly_once", sample_memory, trigger_s,
                         source_options=EXTRA_EOS.get(name), sink_options=EXTRA_EOS_SINK.get(name))
    tuned = name == "spark_tuned"
    return spark_run(inp, "kafka", "kafka", sample_memory=sample_memory, trigger_s=trigger_s,
                     source_options=SPARK_TUNED_SOURCE if tuned else None,
                     sink_options=SPARK_TUNED_SINK if tuned else None)


def ratios(rates: dict[str, list[float]]) -> dict:
    """Per-round rate ratios of the configurations present: exactly-once / each peer
    (``eos_vs_<peer>``) and at-least-once / exactly-once (``eos_alo_vs_eos``)."""
    out = {f"eos_vs_{peer}": round_ratios(rates["eos"], rates[peer]) for peer in PEERS if "eos" in rates and peer in rates}
    if "eos" in rates and "eos_alo" in rates:
        out["eos_alo_vs_eos"] = round_ratios(rates["eos_alo"], rates["eos"])
    if "eos" in rates and "eos_no_evidence" in rates:
        out["eos_vs_eos_no_evidence"] = round_ratios(rates["eos"], rates["eos_no_evidence"])
    for name in EXTRA_EOS:
        if name in rates and "spark_tuned" in rates:
            out[f"{name}_vs_spark_tuned"] = round_ratios(rates[name], rates["spark_tuned"])
    return out


def cpu_medians(runs: list[dict]) -> dict:
    """Median over the rounds of each ``bench.cpu`` figure (CPU seconds per million records per role)."""
    return {k: round(v, 2) for k, v in key_medians([run.get("cpu", {}) for run in runs]).items()}


def suite(inp: Input, rounds: int, settle: Callable[[], dict], log: Callable[[str], None] = print,
          configs: tuple[str, ...] = CONFIGS, trigger_s: float = 5,
          memory: tuple[str, ...] = MEMORY_SAMPLED) -> dict:
    """``rounds`` interleaved rounds of ``configs``; summaries and per-round ratios. Peak memory is
    sampled in the first round for the configurations in ``memory``."""
    runs: dict[str, list[dict]] = {name: [] for name in configs}
    for r in range(rounds):
        for name in configs:
            settled = settle()
            before = load_avg()
            result = run_config(inp, name, sample_memory=r == 0 and name in memory, trigger_s=trigger_s)
            result.update(round=r, settle=settled, load_avg_1m={"before": before, "after": load_avg()})
            runs[name].append(result)
            log(f"round {r + 1}/{rounds} {name} ({inp.partitions} partitions): {result['records_per_s']:,} rec/s "
                f"(load {before} -> {result['load_avg_1m']['after']}, settled {settled['settled']} "
                f"after {settled['waited_s']} s)")
    rates = {name: [run["records_per_s"] for run in runs[name]] for name in configs}
    return {"records_per_s": {name: summary(rates[name]) for name in configs},
            "ratios": ratios(rates),
            "memory": {name: runs[name][0].get("memory") for name in memory if name in runs},
            "cpu_s_per_m": {name: cpu_medians(runs[name]) for name in configs},
            "runs": runs,
            "input": {"topic": inp.topic, "records": inp.records, "record_bytes": inp.size,
                      "partitions": inp.partitions, "max_offsets_per_trigger": inp.max_offsets,
                      "produce_s": inp.produce_s, "warmup_records": min(inp.warmup_records, inp.records),
                      "trigger_s": trigger_s},
            "spark_tuned_options": {"source": SPARK_TUNED_SOURCE, "sink": SPARK_TUNED_SINK}}
