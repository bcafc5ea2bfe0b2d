"""pyspark's floor per Python stage beside the small-batch cell (issue 45): what a batch costs with
no Kafka and no kafka-eos in it, in the same interleaved rounds as kafka-eos and Spark's tuned
``kafka`` pipeline on the ``small_batch`` input (8 partitions, 4,000-record batches, trigger 1 s).

``bench/floor_job.py`` runs four shapes of 4,000-row batches in 2 tasks: Spark's ``rate`` source
or a Python data source that returns ready Arrow batches, into Spark's ``noop`` sink or a Python
sink that only counts. ``py_py`` is a kafka-eos query's shape (a Python source and a Python sink)
with every Kafka and kafka-eos step left out. A run's figure is the median of each Spark duration
over its batches after the first (``cells.batch_figures``); per round, Spark tuned ms / py_py ms
(< 1: the empty two-stage shape is already slower than Spark's whole pipeline).

    python -m bench.python_floor [--rounds 3] [--batches 26]

Writes ``bench/results/<date>-python-floor.json``.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from bench import cells, method, throughput
from bench.common import load_avg, run_job, write_result
from bench.method import round_ratios, summary
from bench.run import log
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster

FLOOR_JOB = Path(__file__).with_name("floor_job.py")
FLOOR_MODES = ("jvm_jvm", "jvm_py", "py_jvm", "py_py")
KAFKA_CONFIGS = ("spark_tuned", "eos")
STAGES = ("triggerExecution", "addBatch", "walCommit", "commitOffsets", "latestOffset", "queryPlanning")


def floor_run(mode: str, batches: int) -> dict:
    args = ["--mode", mode, "--rows", str(cells.SMALL_BATCH_OFFSETS), "--batches", str(batches),
            "--trigger-seconds", str(cells.SMALL_BATCH_TRIGGER_S)]
    return run_job(FLOOR_JOB, args)


def figures(run: dict) -> dict:
    """Median ms of each stage over the batches after the first."""
    timed = run["per_batch"][1:]
    return {k: round(statistics.median(b["ms"].get(k, 0) for b in timed), 1) for k in STAGES}


def measure(rounds: int, batches: int, settle) -> dict:
    runs: dict[str, list[dict]] = {name: [] for name in FLOOR_MODES + KAFKA_CONFIGS}
    with LocalKafkaCluster() as cluster:
        brokers = tuple(n.process.pid for n in cluster.nodes if n.process)
        inp = throughput.prepare_input(cluster.bootstrap, batches * cells.SMALL_BATCH_OFFSETS, cells.CELL_SIZE,
                                       cells.SMALL_BATCH_OFFSETS, warmup=cells.SMALL_BATCH_WARMUP_BATCHES
                                       * cells.SMALL_BATCH_OFFSETS, broker_pids=brokers,
                                       partitions=cells.SMALL_BATCH_PARTITIONS)
        for r in range(rounds):
            order = list(FLOOR_MODES + KAFKA_CONFIGS)
            order = order if r % 2 == 0 else order[::-1]
            for name in order:
                seen = settle()
                run = (floor_run(name, batches) if name in FLOOR_MODES
                       else throughput.run_config(inp, name, trigger_s=cells.SMALL_BATCH_TRIGGER_S))
                run = {"figures": figures(run) if name in FLOOR_MODES else cells.batch_figures(run["per_batch"]),
                       "batches": len(run["per_batch"]), "settle": seen, "load_avg_1m": load_avg()}
                runs[name].append(run)
                log(f"round {r + 1} {name}: {run['figures']}")
    ms = {name: [run["figures"]["triggerExecution"] for run in rs] for name, rs in runs.items()}
    add = {name: [run["figures"]["addBatch"] for run in rs] for name, rs in runs.items()}
    return {"rounds": rounds, "batch_rows": cells.SMALL_BATCH_OFFSETS, "trigger_s": cells.SMALL_BATCH_TRIGGER_S,
            "batch_ms": {name: summary(v) for name, v in ms.items()},
            "add_batch_ms": {name: summary(v) for name, v in add.items()},
            "ratios": {"spark_tuned_vs_py_py": round_ratios(ms["spark_tuned"], ms["py_py"]),
                       "spark_tuned_vs_eos": round_ratios(ms["spark_tuned"], ms["eos"]),
                       "py_py_add_batch_minus_jvm_jvm": [round(a - b, 1) for a, b in zip(add["py_py"], add["jvm_jvm"])]},
            "runs": runs}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=cells.SMALL_BATCH_BATCHES)
    p.add_argument("--settle-busy-pct", type=float, default=25.0)
    p.add_argument("--settle-max-s", type=float, default=60.0)
    a = p.parse_args()
    out = measure(a.rounds, a.batches, lambda: method.settle(a.settle_busy_pct, a.settle_max_s))
    path = write_result("python-floor", out)
    for key in ("batch_ms", "add_batch_ms"):
        log(f"{key}: " + ", ".join(f"{k} {v['median']} [{v['min']}-{v['max']}]" for k, v in out[key].items()))
    log(f"ratios: {out['ratios']}")
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
