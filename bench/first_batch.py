"""A pipeline's start: `kafka-eos run --once` of an example on a fresh checkpoint, per configuration.

What a user waits for before the first output: the run's wall time and its batch 0 (Spark's
``triggerExecution``, from the progress line), on ``local[*]``. Each round runs every
configuration once, in turn, on its own checkpoint over the same input:

- ``preloaded``: what ``kafka-eos run`` does on a local master: task workers fork from
  ``connectors.worker_daemon`` (the data path imported), and the driver maps its class-data
  archive (``connectors.pipeline.driver_archive``; written by an untimed first run into a folder
  of this bench);
- ``no_archive``: the same without the archive (``KAFKA_EOS_JVM_ARCHIVES=off``);
- ``pyspark``: Spark's own ``pyspark.daemon`` (``--conf spark.python.daemon.module=pyspark.daemon``),
  with the archive.

    python -m bench.first_batch --orders 6000 --rounds 3

A local broker is started for the run. Medians of the rounds with min and max; the 1-minute load
average before each run is kept.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import load_avg
from bench.guarantee_gap import spread

DAEMONS = {"preloaded": [], "no_archive": [], "pyspark": ["--conf", "spark.python.daemon.module=pyspark.daemon"]}
ARCHIVES = tempfile.mkdtemp(prefix="bench-jvm-archives-")  # never the user's cache
PIPELINE = Path(__file__).resolve().parent.parent / "config" / "pipelines" / "orders-json.yaml"
TOPICS = {"orders": 3, "orders-priced": 3, "orders-dlq": 1}
BATCH = re.compile(r" batch 0: .* batch (\d+) ms")


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.first_batch", description=__doc__.split("\n")[0])
    parser.add_argument("--orders", type=int, default=6000, help="input orders (the example reads 10,000 a batch)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the result (JSON) here")
    return parser.parse_args(argv)


def run_once(bootstrap: str, daemon: str) -> dict:
    """One `kafka-eos run --once` on a fresh checkpoint; its wall time and batch 0's."""
    from kafka_eos.connectors.spark_harness import python_env
    with tempfile.TemporaryDirectory(prefix="bench-first-batch-") as checkpoints:
        env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": checkpoints,
               "KAFKA_EOS_JVM_ARCHIVES": "off" if daemon == "no_archive" else ARCHIVES}
        load, started = load_avg(), time.monotonic()
        done = subprocess.run([sys.executable, "-m", "kafka_eos.connectors.cli", "run", str(PIPELINE), "--once",
                               *DAEMONS[daemon]], env={**python_env(), **env}, capture_output=True, text=True,
                              timeout=600)
        wall = time.monotonic() - started
    found = BATCH.search(done.stdout)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{daemon}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return {"daemon": daemon, "wall_s": round(wall, 1), "batch0_s": round(int(found.group(1)) / 1000, 1),
            "load_avg_1m": load}


def measure(bootstrap: str, a: argparse.Namespace) -> dict:
    from kafka_eos.connectors.demo_data import create_topics, produce_orders
    create_topics(bootstrap, TOPICS)
    produce_orders(bootstrap, "orders", a.orders)
    run_once(bootstrap, "preloaded")  # untimed: writes the driver's class archive
    runs = []
    for r in range(a.rounds):
        for daemon in (DAEMONS if r % 2 == 0 else reversed(list(DAEMONS))):
            run = run_once(bootstrap, daemon)
            runs.append({**run, "round": r})
            print(f"[{time.strftime('%H:%M:%S')}] round {r + 1} {daemon}: {run}", flush=True)
    summary = {d: {k: spread([run[k] for run in runs if run["daemon"] == d]) for k in ("wall_s", "batch0_s")}
               for d in DAEMONS}
    return {"input": {"orders": a.orders, "pipeline": PIPELINE.name}, "summary": summary, "runs": runs}


def main(argv: list[str] | None = None) -> None:
    a = options(argv)
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    with LocalKafkaCluster() as cluster:
        result = measure(cluster.bootstrap, a)
    print(json.dumps(result["summary"], indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
