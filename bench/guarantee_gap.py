"""Exactly-once vs at-least-once on the same input (issue 27): CPU per role and per-batch time.

Small by design (one input topic, a few batches, interleaved rounds), so it can run on a busy
machine: it reports CPU seconds per million records per process role (``bench.cpu``: JVM, Python
driver, driver-side runners, Python task workers, broker) and Spark's per-batch durations
(``triggerExecution``, ``addBatch``) of the timed batches, not a rate. Each round runs
``eos`` (kafka-eos sink, exactly-once) then ``eos_alo`` (at-least-once), both through
``bench/k2k_job.py`` on ``local[2]`` from the beginning of the same topic into a fresh output.

    python -m bench.guarantee_gap --records 200000 --partitions 8 --max-offsets 50000 --rounds 3

``--writer`` times the sink's task side alone, without Spark (robust on a loaded machine, where a
Spark job's wall time mostly measures waiting for a core): per batch, ``--tasks`` sink tasks
(``KafkaWriter.write``, the production class, one producer each, run one after another) of
``--per-task`` records; exactly-once batches are then committed as the driver does
(``KafkaCommitter``). Per mode it reports the task's wall ms, the task process's CPU (Python and
librdkafka threads), the driver commit's CPU and the broker's CPU, each per million records.

``--bootstrap`` uses a running broker (``--broker-pids`` counts its CPU); otherwise a local broker
is started for the run. The 1-minute load average before and after each run is kept.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from bench.common import load_avg
from bench.throughput import Input, prepare_input, spark_run

MODES = {"eos": "exactly_once", "eos_alo": "at_least_once"}


def options(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--max-offsets", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--trigger-seconds", type=float, default=5)
    p.add_argument("--bootstrap", default="")
    p.add_argument("--broker-pids", default="", help="comma-separated pids of the broker (CPU counted)")
    p.add_argument("--out", default="", help="write every run as JSON here")
    p.add_argument("--writer", action="store_true", help="time the sink tasks alone, without Spark")
    p.add_argument("--tasks", type=int, default=8, help="--writer: sink tasks per batch")
    p.add_argument("--per-task", type=int, default=6250, help="--writer: records per task")
    p.add_argument("--batches", type=int, default=3, help="--writer: batches per run")
    return p.parse_args(argv)


def spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1), "n": len(values)} if values else {}


def run_once(inp: Input, mode: str, trigger_s: float) -> dict:
    before = load_avg()
    result = spark_run(inp, "kafka-eos", "kafka-eos", MODES[mode], trigger_s=trigger_s)
    timed = result["per_batch"][1:]
    return {"mode": mode, "load_avg_1m": {"before": before, "after": load_avg()},
            "batch_ms": [b["ms"]["triggerExecution"] for b in timed],
            "add_batch_ms": [b["ms"].get("addBatch", 0) for b in timed],
            "rows": [b["rows"] for b in timed], "cpu": result.get("cpu", {}),
            "precommit_max_ms": result.get("sink_log", {}).get("precommit_max_ms", [])}


def summarise(runs: list[dict]) -> dict:
    out: dict = {}
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        roles = sorted({k for r in mine for k in r["cpu"] if k.endswith("_s_per_m")})
        out[mode] = {"batch_ms_median_per_run": spread([statistics.median(r["batch_ms"]) for r in mine]),
                     "add_batch_ms_median_per_run": spread([statistics.median(r["add_batch_ms"]) for r in mine]),
                     "cpu_s_per_m": {k: spread([r["cpu"][k] for r in mine if k in r["cpu"]]) for k in roles},
                     "load_avg_1m": spread([r["load_avg_1m"][w] for r in mine for w in ("before", "after")])}
    return out


def measure(a: argparse.Namespace, bootstrap: str, brokers: tuple[int, ...]) -> dict:
    if a.writer:
        from bench.writer_gap import measure_writer
        return measure_writer(a, bootstrap, brokers)
    # the warm-up topic holds min(WARMUP_RECORDS, records): what spark_run's warm-up query waits for
    inp = prepare_input(bootstrap, a.records, a.size, a.max_offsets, broker_pids=brokers, partitions=a.partitions)
    runs = []
    for r in range(a.rounds):
        for mode in MODES:
            run = run_once(inp, mode, a.trigger_seconds)
            run["round"] = r
            runs.append(run)
            print(f"[{time.strftime('%H:%M:%S')}] round {r + 1} {mode}: batch ms {run['batch_ms']} "
                  f"cpu {run['cpu'].get('total_s_per_m')} s/M load {run['load_avg_1m']}", flush=True)
    return {"input": {"records": a.records, "bytes": a.size, "partitions": a.partitions,
                      "max_offsets": a.max_offsets, "trigger_s": a.trigger_seconds},
            "summary": summarise(runs), "runs": runs}


def main(argv: list[str] | None = None) -> None:
    a = options(argv)
    if a.bootstrap:
        brokers = tuple(int(p) for p in a.broker_pids.split(",") if p)
        result = measure(a, a.bootstrap, brokers)
    else:
        from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
        with LocalKafkaCluster() as cluster:
            result = measure(a, cluster.bootstrap, tuple(n.process.pid for n in cluster.nodes if n.process))
    text = json.dumps(result, indent=2)
    print(json.dumps(result["summary"], indent=2))
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
