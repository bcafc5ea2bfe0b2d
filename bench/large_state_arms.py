"""One run of one arm of the large-state cell (``bench.large_state``): kafka-eos with ``state.backend``
``hdfs`` or ``rocksdb`` (``kafka-eos run --once``), or Spark's own Kafka source and sink
(``bench/large_state_job.py`` through spark-submit, tuned as ``bench.throughput`` tunes it).

A run has its own checkpoint, output topic and one-partition ``tail`` topic the query also reads:
1. the main run over the input (the state grows to every key): rate, batch p50/p95, peak memory;
   then the checkpoint's and the state's size on disk;
2. the restart: ``TAIL`` is written to the tail topic and the query started again on the same
   checkpoint: seconds from the launch to its first batch's commit (the state loaded first);
3. kafka-eos, windowed only (savepoints refuse deduplication): ``kafka-eos savepoint`` of the
   stopped pipeline (seconds), ``CLOSE`` written, ``run --from-savepoint --once`` on a new checkpoint
   (seconds: the replay of the open window and its output). Every other run (Spark's, dedup, and
   kafka-eos's without savepoints) gets ``CLOSE`` with ``TAIL`` at its restart, so every arm's
   output is complete: the watermark passes every event (SQL's DISTINCT is an aggregation keyed
   by the event time: a row is emitted when the watermark passes it);
4. the output read (read_committed) and checked (``OutputCheck``): not exact, the run is flagged.
A step that fails (exit code, timeout, out of memory) is recorded with its log's tail, not raised.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from confluent_kafka import Consumer, Producer

from bench import throughput
from bench.common import load_avg, spark_kafka_jars
from bench.large_state_input import CLOSE, SCHEMA, TAIL, OutputCheck, Query, batch_figures, payload
from bench.memory import TreeSampler
from bench.verify_cost_parts import BATCH_LINE, CLI, cpu_total, start
from kafka_eos.config.state_backend import PROVIDERS, StateBackend, StateSpec, state_conf
from kafka_eos.connectors.pipeline.runner import WORKER_MEMORY_CONF
from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env, spark_submit_binary

JOB = Path(__file__).parent / "large_state_job.py"
PARTITIONS = 4
STEP_MAX_S = 3600.0


@dataclass(frozen=True)
class Cell:
    bootstrap: str
    source: str
    keys: int
    query: Query
    max_offsets: int
    heap: str
    workdir: Path
    savepoints: bool = True  # False: no savepoint and restore; the window is closed at the restart

    @property
    def saves(self) -> bool:
        return self.savepoints and self.query.savepoints


def send(bootstrap: str, topic: str, events: list[tuple[str, int]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for n, (key, at) in enumerate(events):
        producer.produce(topic, payload(-1 - n, key, at), key.encode())
    producer.flush(30)


def disk_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1) if path.exists() else 0.0


def read_output(bootstrap: str, topic: str, check: OutputCheck, idle_s: float = 5.0, max_s: float = 1800) -> dict:
    """Every committed record of ``topic`` through ``check`` (streamed: nothing kept per record)."""
    from integration_tests.kafka_tools import unique
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("lstate-check"),
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    began = last = time.monotonic()
    try:
        while time.monotonic() - last < idle_s and time.monotonic() - began < max_s:
            for message in consumer.consume(10_000, 1.0):
                if message.error() is None and message.value() is not None:
                    check.add(json.loads(message.value() or b"{}"))
                    last = time.monotonic()
    finally:
        consumer.close()
    return check.result()


def timed_cli(args: list[str], log: Path) -> dict:
    """``kafka-eos <args>`` to its end: exit code, seconds, batch lines (rows, ms, arrival), peak memory."""
    from integration_tests.pipeline_runs import kill_group
    launched, before = time.time(), load_avg()
    proc, lines, cpu = start(args, log)
    memory = TreeSampler(proc.pid, CLI, interval=1.0).start()
    try:
        code: int | None = proc.wait(STEP_MAX_S)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        code = None
    finally:
        memory.stop()
    lines.thread.join(10)
    batches = [(int(m[2]), int(m[3]), at) for at, line in lines.lines if (m := BATCH_LINE.search(line))]
    peaks = memory.peaks()
    out = {"exit": code, "seconds": round(time.time() - launched, 2), "cpu_s": cpu_total(cpu)["total"],
           "batches_ms": [(r, ms) for r, ms, _ in batches], "first_commit_s":
           round(batches[0][2] - launched, 2) if batches else None, "jvm_peak_rss_mb": peaks["driver_jvm_mb"],
           "tree_peak_pss_mb": peaks["total_pss_mb"], "load_avg_1m": {"before": before, "after": load_avg()}}
    if code != 0:
        out["failure"] = f"exit {code}" + ("" if code is not None else f" (killed after {STEP_MAX_S:.0f} s)")
        out["log_tail"] = lines.tail(25)
    return out


def timed_spark(cell: Cell, topics: str, sink: str, checkpoint: Path, log: Path) -> dict:
    """The peer job to its end: the same figures as ``timed_cli``."""
    conf = {**SMALL_CONF, **WORKER_MEMORY_CONF, "spark.driver.memory": cell.heap,
            **state_conf(PROVIDERS[StateBackend.HDFS], StateSpec())}
    cmd = [spark_submit_binary(), "--master", "local[2]", *[f"--conf={k}={v}" for k, v in conf.items()],
           "--jars", spark_kafka_jars(), str(JOB), "--bootstrap", cell.bootstrap, "--topics", topics,
           "--output", sink, "--checkpoint", str(checkpoint), "--sql", cell.query.sql, "--delay", cell.query.delay,
           "--max-offsets", str(cell.max_offsets)]
    cmd += [x for k, v in throughput.SPARK_TUNED_SOURCE.items() for x in ("--source-option", f"{k}={v}")]
    cmd += [x for k, v in throughput.SPARK_TUNED_SINK.items() for x in ("--sink-option", f"{k}={v}")]
    launched, before = time.time(), load_avg()
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, env=python_env(), stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
        memory = TreeSampler(proc.pid, str(JOB), interval=1.0).start()
        try:
            stdout, _ = proc.communicate(timeout=STEP_MAX_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, _ = proc.communicate()
        finally:
            memory.stop()
    found = [json.loads(line[6:]) for line in stdout.splitlines() if line.startswith("BENCH ")]
    batches = found[0]["batches"] if found else []
    with_rows = [b for b in batches if b[0]]
    peaks = memory.peaks()
    out = {"exit": proc.returncode, "seconds": round(time.time() - launched, 2),
           "batches_ms": [(r, ms) for r, ms, _ in batches],
           "first_commit_s": round(with_rows[0][2] + with_rows[0][1] / 1000 - launched, 2) if with_rows else None,
           "jvm_peak_rss_mb": peaks["driver_jvm_mb"], "tree_peak_pss_mb": peaks["total_pss_mb"],
           "load_avg_1m": {"before": before, "after": load_avg()}}
    if proc.returncode != 0 or not found:
        out["failure"] = f"exit {proc.returncode}"
        out["log_tail"] = "\n".join(line for line in log.read_text().splitlines()[-40:] if "\tat " not in line)
    return out


def pipeline_file(directory: Path, cell: Cell, topics: list[str], sink: str, backend: str, prefix: str,
                  checkpoint: str) -> Path:
    q = cell.query
    doc = {"version": 1, "name": f"large-state-{q.name}-{backend}",
           "source": {"kafka": {"bootstrap_servers": cell.bootstrap}, "topics": topics, "starting_offsets": "earliest",
                      "format": "json", "schema": {"inline": SCHEMA}, "max_offsets_per_trigger": cell.max_offsets},
           "transform": {"watermark": {"column": "event_time", "expression": "timestamp_millis(value.at)",
                                       "delay": q.delay}, "sql": q.sql},
           "sink": {"kafka": {"bootstrap_servers": cell.bootstrap}, "topic": sink, "format": "json",
                    "transactional_id_prefix": prefix},
           "checkpoint": {"location": str(directory / checkpoint), "trigger": "0 seconds"},
           "state": {"backend": backend}}
    path = directory / f"{checkpoint}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _figures(main: dict, restart: dict | None, directory: Path, checkpoint: str) -> dict:
    steps = [s for s in (main, restart) if s]
    return {**batch_figures(main["batches_ms"]), "main_s": main["seconds"],
            "jvm_peak_rss_mb": max(s["jvm_peak_rss_mb"] for s in steps),
            "tree_peak_pss_mb": max(s["tree_peak_pss_mb"] for s in steps),
            "checkpoint_mb": disk_mb(directory / checkpoint), "state_mb": disk_mb(directory / checkpoint / "state"),
            "restart_s": restart and restart["first_commit_s"]}


def closing(cell: Cell, spark: bool) -> list[tuple[str, int]]:
    """What the restart reads: ``TAIL``, and ``CLOSE`` unless a restore follows (it gets ``CLOSE``)."""
    return [TAIL, CLOSE] if spark or not cell.saves else [TAIL]


def run_arm(cell: Cell, arm: str) -> dict:
    """One run of ``arm`` (``hdfs``, ``rocksdb`` or ``spark``) on ``cell``; every step's figures kept."""
    from integration_tests.kafka_tools import create_topic, unique
    directory = Path(tempfile.mkdtemp(prefix=f"{cell.query.name}-{arm}-", dir=cell.workdir))
    tail = create_topic(cell.bootstrap, unique("lstate-tail"), 1)
    sink = create_topic(cell.bootstrap, unique("lstate-out"), PARTITIONS)
    before = load_avg()
    steps: dict[str, dict] = {}
    if arm == "spark":
        topics = f"{cell.source},{tail}"
        steps["main"] = timed_spark(cell, topics, sink, directory / "checkpoint", directory / "main.log")
        if "failure" not in steps["main"]:
            send(cell.bootstrap, tail, closing(cell, spark=True))
            steps["restart"] = timed_spark(cell, topics, sink, directory / "checkpoint", directory / "restart.log")
    else:
        prefix = unique("lstate")
        path = pipeline_file(directory, cell, [cell.source, tail], sink, arm, prefix, "checkpoint")
        conf = ["--conf", f"spark.driver.memory={cell.heap}"]
        steps["main"] = timed_cli(["run", str(path), "--once", *conf], directory / "main.log")
        if "failure" not in steps["main"]:
            send(cell.bootstrap, tail, closing(cell, spark=False))
            steps["restart"] = timed_cli(["run", str(path), "--once", *conf], directory / "restart.log")
        if cell.saves and "failure" not in steps.get("restart", {"failure": 1}):
            saved = directory / "savepoint"
            steps["savepoint"] = timed_cli(["savepoint", str(path), "--to", str(saved)], directory / "savepoint.log")
            send(cell.bootstrap, tail, [CLOSE])
            restored = pipeline_file(directory, cell, [cell.source, tail], sink, arm, prefix + "-r", "restored")
            steps["restore"] = timed_cli(["run", str(restored), "--from-savepoint", str(saved), "--once", *conf],
                                         directory / "restore.log")
    failures = {name: s["failure"] for name, s in steps.items() if "failure" in s}
    out: dict = {"arm": arm, "load_avg_1m": {"before": before, "after": load_avg()}, "failures": failures,
                 "steps": steps, "directory": str(directory)}
    if "failure" not in steps["main"]:
        out.update(_figures(steps["main"], steps.get("restart"), directory, "checkpoint"))
    if "savepoint" in steps and not failures:
        out.update(savepoint_s=steps["savepoint"]["seconds"], restore_s=steps["restore"]["seconds"])
    out["output"] = read_output(cell.bootstrap, sink, OutputCheck(cell.query.name, cell.keys))
    out["output_exact"] = out["output"]["exact"] and not failures
    for kept in ("checkpoint", "restored", "savepoint"):  # the logs stay; 10M keys' state takes GBs
        shutil.rmtree(directory / kept, ignore_errors=True)
    return out
