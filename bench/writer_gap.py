"""``bench.guarantee_gap --writer``: the sink's task side alone, exactly-once vs at-least-once.

Runs the production ``KafkaWriter`` in this process on the same Arrow batch (``--per-task``
records of ``--size`` bytes), ``--tasks`` tasks per batch, ``--batches`` batches per run, the
modes interleaved for ``--rounds`` rounds; exactly-once batches are committed by
``KafkaCommitter`` as the driver does. CPU: ``time.process_time`` (every thread of this process,
librdkafka's included) for the tasks and, apart, for the commits; the broker's from ``psutil``.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

import psutil
import pyarrow as pa

from bench.common import load_avg
from integration_tests.kafka_tools import committed_end_offsets, create_topic, unique
from kafka_eos.txn.protocol.kafka_committer import KafkaCommitter
from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.protocol.sink_config import SinkConfig

MODES = {"eos": True, "eos_alo": False}


def _spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2), "n": len(values)}


def _broker_cpu(brokers: list[psutil.Process]) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in brokers)


def one_run(a: argparse.Namespace, bootstrap: str, brokers: list[psutil.Process], mode: str, rows: pa.RecordBatch,
            topic: str, log_dir: str) -> dict:
    config = SinkConfig({"bootstrap.servers": bootstrap}, f"gap-{uuid.uuid4().hex[:8]}", log_dir, topic=topic,
                        exactly_once=MODES[mode])
    committer = KafkaCommitter(config.client_conf())
    before = load_avg()
    task_ms: list[float] = []
    task_cpu = commit_cpu = 0.0
    broker_start = _broker_cpu(brokers)
    for batch_id in range(a.batches):
        handles = []
        for partition in range(a.tasks):
            cpu, wall = time.process_time(), time.monotonic()
            handles.append(KafkaWriter(config, batch_id, partition).write([rows]))
            task_ms.append((time.monotonic() - wall) * 1000)
            task_cpu += time.process_time() - cpu
        cpu = time.process_time()
        outcomes = committer.commit(handles)
        commit_cpu += time.process_time() - cpu
        if MODES[mode] and len(outcomes) != a.tasks:
            raise RuntimeError(f"{mode}: {len(outcomes)} of {a.tasks} transactions committed")
    records = a.batches * a.tasks * rows.num_rows
    per_m = 1e6 / records
    return {"mode": mode, "load_avg_1m": {"before": before, "after": load_avg()},
            "task_ms": [round(t, 1) for t in task_ms], "task_ms_median": round(statistics.median(task_ms), 1),
            "cpu_s_per_m": {"sink_task": round(task_cpu * per_m, 3), "driver_commit": round(commit_cpu * per_m, 3),
                            "broker": round((_broker_cpu(brokers) - broker_start) * per_m, 3)}}


def measure_writer(a: argparse.Namespace, bootstrap: str, broker_pids: tuple[int, ...]) -> dict:
    brokers = [psutil.Process(p) for p in broker_pids]
    topic = create_topic(bootstrap, unique("gap-out"), a.partitions)
    pad = b"x" * a.size
    rows = pa.record_batch({"key": [str(i).encode() for i in range(a.per_task)],
                            "value": [pad[: a.size - len(str(i))] + str(i).encode() for i in range(a.per_task)]})
    runs = []
    with tempfile.TemporaryDirectory() as log_dir:
        for r in range(a.rounds):
            for mode in MODES:
                run = one_run(a, bootstrap, brokers, mode, rows, topic, log_dir)
                run["round"] = r
                runs.append(run)
                print(f"[{time.strftime('%H:%M:%S')}] round {r + 1} {mode}: task ms median {run['task_ms_median']} "
                      f"cpu s/M {run['cpu_s_per_m']} load {run['load_avg_1m']}", flush=True)
    written = sum(committed_end_offsets(bootstrap, topic).values())
    expected = a.rounds * len(MODES) * a.batches * a.tasks * a.per_task
    if written < expected:
        raise RuntimeError(f"{topic} holds {written} < {expected} records")
    summary = {mode: {"task_ms_median_per_run": _spread([r["task_ms_median"] for r in runs if r["mode"] == mode]),
                      "cpu_s_per_m": {k: _spread([r["cpu_s_per_m"][k] for r in runs if r["mode"] == mode])
                                      for k in ("sink_task", "driver_commit", "broker")},
                      "load_avg_1m": _spread([r["load_avg_1m"][w] for r in runs if r["mode"] == mode
                                              for w in ("before", "after")])}
               for mode in MODES}
    return {"input": {"tasks": a.tasks, "per_task": a.per_task, "batches": a.batches, "bytes": a.size,
                      "output_partitions": a.partitions, "rounds": a.rounds},
            "summary": summary, "runs": runs}
