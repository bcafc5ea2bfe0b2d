"""Scaling (issue 14): kafka-eos exactly-once on a local Spark standalone cluster, 1 vs 2 Workers x 4 vs 16 partitions.

Measures the records/s of the ``eos`` configuration of ``bench.throughput`` (``bench/k2k_job.py``:
kafka-eos source + sink, exactly-once, trigger 5 s, a warm-up query in the same JVM first),
submitted with spark-submit to a real standalone cluster (``StandaloneSpark``: a Master and 1 or
2 Workers of 1 core and ``worker_memory`` each), for every cell (Workers, partitions) of
``WORKERS`` x ``PARTITIONS``.

How, the method of ``bench.throughput``: per partition count one input topic (and its warm-up
topic) of that many partitions, the same records of the same size, written once; ``rounds``
interleaved rounds, each running every cell in turn (per Worker count, one cluster is started,
its cells run, then it is stopped); ``bench.method.settle`` before each run; the rate is the
job's steady state (the batches after the first); per cell ``bench.method.summary``.
Each run writes a fresh output topic of as many partitions as its input, checked afterwards to
hold every input record. The source gets ``minPartitions`` = partitions: one task per input
partition and batch; the sink writes one transaction per task, and the sink log's largest
transaction count per batch is checked to equal the partition count.

    python -m bench.scaling [--records 200000] [--rounds 1] [--size 100] [--max-offsets N] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Callable

from bench.common import load_avg, run_job
from bench.method import summary
from bench.throughput import JOB, WARMUP_RECORDS, Input, prepare_input
from integration_tests.kafka_tools import committed_end_offsets, create_topic, unique
from kafka_eos.connectors.dev.standalone_spark import StandaloneSpark

WORKERS = (1, 2)
PARTITIONS = (4, 16)
WORKER_MEMORY = "1g"

Cell = tuple[int, int]  # (Workers, partitions)


def cells(workers: tuple[int, ...] = WORKERS, partitions: tuple[int, ...] = PARTITIONS) -> list[Cell]:
    """Every (Workers, partitions) pair, in the order a round runs them."""
    return [(w, p) for w in workers for p in partitions]


def cell_key(cell: Cell) -> str:
    """The JSON key of a cell: ``"2w_16p"``."""
    return f"{cell[0]}w_{cell[1]}p"


def prepare_inputs(bootstrap: str, records: int, size: int, max_offsets: int,
                   partitions: tuple[int, ...] = PARTITIONS) -> dict[int, Input]:
    """Per partition count, an input topic and a warm-up topic of that many partitions."""
    return {p: prepare_input(bootstrap, records, size, max_offsets, partitions=p) for p in partitions}


def job_args(inp: Input, partitions: int, output: str, warm_output: str) -> list[str]:
    """k2k_job arguments of the ``eos`` configuration, one source task per input partition."""
    return ["--bootstrap", inp.bootstrap, "--input", inp.topic, "--format", "kafka-eos",
            "--records", str(inp.records), "--trigger-seconds", "5", "--guarantee", "exactly_once",
            "--max-offsets", str(inp.max_offsets), "--warmup-input", inp.warmup,
            "--warmup-records", str(min(WARMUP_RECORDS, inp.records)),
            f"--source-option=minPartitions={partitions}", "--output", output, "--warmup-output", warm_output]


def sink_tasks(result: dict) -> list[int]:
    """Transactions (= sink tasks) per timed batch, from the job's sink log metrics."""
    return [int(t) for t in result.get("sink_log", {}).get("transactions", [])]


def eos_run(inp: Input, partitions: int, master: str) -> dict:
    """One timed exactly-once run of ``inp`` on ``master``; output checked, task count checked."""
    out = create_topic(inp.bootstrap, unique(f"bench-scale-out-{partitions}p"), partitions)
    warm_out = create_topic(inp.bootstrap, unique("bench-scale-warm-out"), partitions)
    with tempfile.TemporaryDirectory() as ck:
        result = run_job(JOB, [*job_args(inp, partitions, out, warm_out), "--checkpoint", ck], master=master)
    visible = sum(committed_end_offsets(inp.bootstrap, out).values())
    if visible < inp.records:
        raise RuntimeError(f"scaling {master}: output {out} ends at {visible} < {inp.records} records")
    tasks = sink_tasks(result)
    if not tasks or max(tasks) != partitions:
        raise RuntimeError(f"scaling: expected {partitions} sink tasks per batch, sink log says {tasks}")
    result.update(output_end_offsets=visible, sink_tasks=tasks)
    return result


def suite(inputs: dict[int, Input], rounds: int, settle: Callable[[], dict], log: Callable[[str], None] = print,
          workers: tuple[int, ...] = WORKERS, worker_memory: str = WORKER_MEMORY) -> dict:
    """``rounds`` interleaved rounds of every cell; per cell the summary of its rates and every run."""
    matrix = cells(workers, tuple(inputs))
    runs: dict[str, list[dict]] = {cell_key(c): [] for c in matrix}
    for r in range(rounds):
        for w in workers:
            with tempfile.TemporaryDirectory(prefix="bench-scale-spark-") as work, \
                    StandaloneSpark(workers=w, cores_per_worker=1, memory_per_worker=worker_memory,
                                    workdir=Path(work)) as cluster:
                for cell in [c for c in matrix if c[0] == w]:
                    runs[cell_key(cell)].append(_timed(inputs[cell[1]], cell, cluster.master_url, r, settle))
                    log(f"scaling round {r + 1}/{rounds}, {line(cell, runs[cell_key(cell)][-1])}")
    first = next(iter(inputs.values()))
    return {"cells": [{"key": cell_key(c), "workers": c[0], "partitions": c[1]} for c in matrix],
            "records_per_s": {k: summary([run["records_per_s"] for run in v]) for k, v in runs.items()},
            "runs": runs,
            "input": {"records": first.records, "record_bytes": first.size,
                      "max_offsets_per_trigger": first.max_offsets,
                      "warmup_records": min(WARMUP_RECORDS, first.records),
                      "topics": {p: inp.topic for p, inp in inputs.items()},
                      "produce_s": {p: inp.produce_s for p, inp in inputs.items()}},
            "cluster": {"cores_per_worker": 1, "memory_per_worker": worker_memory, "executor_memory": "1g"}}


def _timed(inp: Input, cell: Cell, master: str, r: int, settle: Callable[[], dict]) -> dict:
    settled = settle()
    before = load_avg()
    result = eos_run(inp, cell[1], master)
    result.update(round=r, workers=cell[0], partitions=cell[1], settle=settled,
                  load_avg_1m={"before": before, "after": load_avg()})
    return result


def line(cell: Cell, run: dict) -> str:
    """One run's log line."""
    return (f"{cell[0]} workers, {cell[1]} partitions: {run['records_per_s']:,} rec/s "
            f"(load {run['load_avg_1m']['before']} -> {run['load_avg_1m']['after']}, "
            f"settled {run['settle']['settled']} after {run['settle']['waited_s']} s)")


def lines(scaling: dict) -> list[str]:
    """The report's lines, one per cell: ``scaling, 2 workers, 16 partitions: median X rec/s [min-max]``."""
    out = []
    for c in scaling.get("cells", []):
        s = scaling["records_per_s"][c["key"]]
        out.append(f"scaling, {c['workers']} workers, {c['partitions']} partitions: median {s['median']:,} rec/s "
                   f"[{s['min']:,}-{s['max']:,}]{' NOISY' if s['noisy'] else ''}")
    return out


def measure(bootstrap: str, records: int, size: int, rounds: int, settle: Callable[[], dict],
            log: Callable[[str], None] = print, max_offsets: int = 0) -> dict:
    """Write the inputs, then run the suite (``max_offsets`` default: records / 4)."""
    inputs = prepare_inputs(bootstrap, records, size, max_offsets or records // 4)
    log(f"scaling: {records:,} x {size} B per partition count {list(inputs)}; {rounds} rounds of {cells()}")
    return suite(inputs, rounds, settle, log)


def main(argv: list[str] | None = None) -> None:
    from bench.method import settle
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--size", type=int, default=100, help="record size in bytes")
    p.add_argument("--max-offsets", type=int, default=0, help="maxOffsetsPerTrigger (default: records / 4)")
    p.add_argument("--settle-max-s", type=float, default=60.0)
    p.add_argument("--json", type=Path, help="also write the result here")
    a = p.parse_args(argv)
    with LocalKafkaCluster() as kafka:
        result = measure(kafka.bootstrap, a.records, a.size, a.rounds, lambda: settle(25.0, a.settle_max_s),
                         max_offsets=a.max_offsets)
    if a.json:
        a.json.write_text(json.dumps(result, indent=2))
    print("\n".join(lines(result)))


if __name__ == "__main__":
    main()
