"""Restart to first commit (issue 45.4): what an operator waits for after a crash.

The time from ``spark-submit`` to the end of the query's first batch with records (its
``triggerExecution`` end: the batch is committed, its output visible to ``read_committed``), for
kafka-eos (defaults) and Spark's own ``kafka`` source and sink (tuned as in ``bench.throughput``),
on a fresh checkpoint and on a restart from that checkpoint; each also with ``SPARK_HOME`` at the
compiled Spark home (``connectors.pipeline.compiled_pyspark``: what ``kafka-eos run`` sets, and a
spark-submit user can; built into ``build/bench-spark-home``, never the user's cache). Each round
runs, in turn, every system fresh, then every system restarted; every job is
``bench/k2k_job.py`` on ``local[2]`` reading ``--batch`` records (``maxOffsetsPerTrigger``) of an
8-partition topic, then stopping. No warm-up and no class archive: a user's cold JVM.

    python -m bench.restart --rounds 3

A local broker is started for the run. Medians of the rounds with min and max, and the median of
the per-round ratios eos / spark.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench import method, throughput
from bench.common import SparkJob, load_avg, machine, produce_bulk, write_result
from bench.throughput import JOB
from integration_tests.kafka_tools import create_topic, unique

PARTITIONS = 8
_TUNED = ([f"{k}={v}" for k, v in throughput.SPARK_TUNED_SOURCE.items()],
          [f"{k}={v}" for k, v in throughput.SPARK_TUNED_SINK.items()])
# name -> (format, source options, sink options, SPARK_HOME at the compiled Spark home)
SYSTEMS = {"eos": ("kafka-eos", [], [], False), "spark_tuned": ("kafka", *_TUNED, False),
           "eos_compiled": ("kafka-eos", [], [], True), "spark_tuned_compiled": ("kafka", *_TUNED, True)}
# (numerator, denominator) of the per-round ratios: same Spark home, and what each user gets by default
RATIOS = {"eos/spark_tuned": ("eos", "spark_tuned"),
          "eos_compiled/spark_tuned_compiled": ("eos_compiled", "spark_tuned_compiled"),
          "eos_compiled/spark_tuned": ("eos_compiled", "spark_tuned")}
HOMES = Path(__file__).resolve().parents[1] / "build" / "bench-spark-home"


def spark_home_env(compiled: bool) -> dict[str, str]:
    if not compiled:
        return {}
    from kafka_eos.connectors.pipeline.compiled_pyspark import with_spark_home
    return {"SPARK_HOME": with_spark_home({"KAFKA_EOS_SPARK_HOME_CACHE": str(HOMES)})["SPARK_HOME"]}


def first_commit_s(bootstrap: str, system: str, topic: str, output: str, checkpoint: Path, batch: int,
                   env: dict[str, str]) -> dict:
    """One spark-submit on ``checkpoint`` (fresh or resumed) until ``batch`` records went through."""
    fmt, source, sink, _ = SYSTEMS[system]
    args = ["--bootstrap", bootstrap, "--input", topic, "--output", output,
            "--checkpoint", str(checkpoint), "--resume", "--format", fmt, "--records", str(batch),
            "--max-offsets", str(batch), "--trigger-seconds", "1"]
    for option in source:
        args += ["--source-option", option]
    for option in sink:
        args += ["--sink-option", option]
    launched = time.time()
    result = SparkJob(JOB, args, packages=fmt == "kafka", env=env).result(timeout=600)
    first = result["per_batch"][0]
    return {"to_first_commit_s": round(first["start_s"] + first["ms"]["triggerExecution"] / 1000 - launched, 2),
            "first_batch_ms": first["ms"]["triggerExecution"], "first_batch_phases_ms": first["ms"],
            "batch_id": first["batch"], "rows": first["rows"]}


def measure(bootstrap: str, rounds: int, batch: int, settle, log=print) -> dict:
    topic = unique("restart-in")
    create_topic(bootstrap, topic, PARTITIONS)
    produce_bulk(bootstrap, topic, batch * 2 * rounds * len(SYSTEMS) + batch)
    runs: dict[str, list[dict]] = {f"{s}_{kind}": [] for kind in ("fresh", "restart") for s in SYSTEMS}
    envs = {system: spark_home_env(spec[3]) for system, spec in SYSTEMS.items()}  # built before any timed job
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        for r in range(rounds):
            outputs = {system: create_topic(bootstrap, unique(f"restart-out-{system}"), PARTITIONS) for system in SYSTEMS}
            for kind in ("fresh", "restart"):
                for system in SYSTEMS:
                    settled, before = settle(), load_avg()
                    out = first_commit_s(bootstrap, system, topic, outputs[system], Path(tmp) / f"{system}-{r}", batch,
                                         envs[system])
                    out.update(round=r, settle=settled, load_avg_1m=before)
                    runs[f"{system}_{kind}"].append(out)
                    log(f"round {r + 1}/{rounds} {system} {kind}: first commit {out['to_first_commit_s']} s "
                        f"(batch {out['batch_id']}, {out['rows']} rows, {out['first_batch_ms']} ms; load {before})")
    seconds = {name: [run["to_first_commit_s"] for run in found] for name, found in runs.items()}
    return {"to_first_commit_s": {name: method.summary(v) for name, v in seconds.items()},
            "ratios": {f"{name} {kind}": method.round_ratios(seconds[f"{a}_{kind}"], seconds[f"{b}_{kind}"])
                       for name, (a, b) in RATIOS.items() for kind in ("fresh", "restart")},
            "runs": runs, "batch_records": batch, "partitions": PARTITIONS}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.restart", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=3000, help="records of the first batch (maxOffsetsPerTrigger)")
    p.add_argument("--settle-busy-pct", type=float, default=25.0)
    p.add_argument("--settle-max-s", type=float, default=120.0)
    p.add_argument("--name", default=None, help="result file name (default: <date>-restart)")
    a = p.parse_args(argv)
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    with LocalKafkaCluster() as cluster:
        result = measure(cluster.bootstrap, a.rounds, a.batch,
                         lambda: method.settle(a.settle_busy_pct, a.settle_max_s))
    result["machine"] = machine()
    path = write_result(a.name or "restart", result)
    print(json.dumps({k: result[k] for k in ("to_first_commit_s", "ratios")}, indent=1))
    print(f"written {path}")


if __name__ == "__main__":
    main()
