"""N pipelines as one group in one Spark application against N separate drivers (issue 67).

For each N (``--counts``, default 1,5,10,20; ``--quick``: 1,3): N copy pipelines (bytes in,
bytes out, trigger 1 s, each its own input and output topic of 2 partitions) at a fixed TOTAL
input rate (``--rate``, 2,000 records/s of 100 B, spread over the N inputs by a producer in this
process), run (a) as one group, ``kafka-eos run f1.yaml .. fN.yaml``, and (b) as N separate
``kafka-eos run fi.yaml`` processes (only for N in ``--separate``, default 1,5). Per arm: the PSS
of the whole process tree(s) every 2 s over ``--window`` s (90) after every pipeline's first
committed batch (peak, median, per role, the process list of the last sample); the time from the
start to every pipeline's first commit; records/s per pipeline and batch p50/p95 from the
progress lines of the window; then the producer stops, the pipelines drain (their ``out`` sums
reach the input), SIGTERM, and every output is read with read_committed: each id exactly once.
(The window starts ``--settle`` s, 20, after the last first commit: the start's backlog is caught up.)
The marginal pipeline is (PSS(group N) - PSS(group 1)) / (N - 1), on the medians.

    python -m bench.pipeline_groups [--counts 1,5,10,20] [--separate 1,5] [--rounds 1] [--quick]
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import yaml
from confluent_kafka import Producer

from bench.common import load_avg
from bench.pipeline_groups_parts import PssSeries, batches, line, not_run, pipeline_figures, summary, tree_rows

RECORD_BYTES = 100
SAMPLE_S = 2.0
FAILED = re.compile(r"^kafka-eos (\S+): failed \(\d+\): (.{0,160})", re.M)
CLUSTER = {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}
Log = Callable[[str], None]


def options(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pipeline_groups", description=__doc__.split("\n")[0])
    p.add_argument("--counts", default="1,5,10,20", help="pipelines per group, comma-separated")
    p.add_argument("--separate", default="1,5", help="N also run as N separate drivers")
    p.add_argument("--rate", type=int, default=2_000, help="total input records/s over all pipelines")
    p.add_argument("--window", type=float, default=90.0, help="steady seconds sampled after every first commit")
    p.add_argument("--settle", type=float, default=20.0, help="seconds after every first commit before the window "
                   "(the backlog of the start is caught up)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting of every run")
    p.add_argument("--first-commit-bound", type=float, default=600.0, help="seconds for every first commit")
    p.add_argument("--rounds", type=int, default=1, help="interleaved rounds (group N, separate N, next N)")
    p.add_argument("--quick", action="store_true", help="N = 1 and 3, a 20 s window")
    p.add_argument("--out", help="also write the result (JSON) here")
    a = p.parse_args(argv)
    if a.quick:
        a.counts, a.separate, a.window, a.settle = "1,3", "1,3", min(a.window, 20.0), min(a.settle, 10.0)
    return a


def copy_pipeline(folder: Path, name: str, source: str, out: str) -> Path:
    doc = {"version": 1, "name": name,
           "source": {"kafka": CLUSTER, "topics": [source], "starting_offsets": "earliest"},
           "sink": {"kafka": CLUSTER, "topic": out},
           "checkpoint": {"location": f"${{KAFKA_EOS_CHECKPOINTS}}/{name}", "trigger": "1 second"}}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


class PacedInput(threading.Thread):
    """``rate`` records/s of ``RECORD_BYTES`` (the zero-padded id per topic) spread over ``topics``."""

    def __init__(self, bootstrap: str, topics: list[str], rate: int) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
        self.topics, self.rate, self.sent = topics, rate, {t: 0 for t in topics}
        self.errors, self.halt = 0, threading.Event()

    def _done(self, err, _msg) -> None:
        if err is not None:
            self.errors += 1

    def run(self) -> None:
        started, turn = time.monotonic(), 0
        while not self.halt.is_set():
            due = int((time.monotonic() - started) * self.rate) - sum(self.sent.values())
            for _ in range(max(0, due)):
                topic = self.topics[turn % len(self.topics)]
                turn += 1
                self.producer.produce(topic, b"%0*d" % (RECORD_BYTES, self.sent[topic]), on_delivery=self._done)
                self.sent[topic] += 1
            self.producer.poll(0.05)
        self.producer.flush(60)


class Arm:
    """One arm's processes: ``kafka-eos run`` of all files (group) or one per file (separate)."""

    def __init__(self, files: list[Path], separate: bool, bootstrap: str, checkpoints: Path, logs: Path,
                 more_conf: list[str]) -> None:
        from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env
        conf = [arg for kv in [f"{k}={v}" for k, v in SMALL_CONF.items()] + more_conf for arg in ("--conf", kv)]
        env = {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints)}
        runs = [[f] for f in files] if separate else [files]
        self.logs = [logs / f"run-{i}.log" for i in range(len(runs))]
        self.procs = []
        for run, log in zip(runs, self.logs, strict=True):
            with open(log, "wb") as out:
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "kafka_eos.connectors.cli", "run", *map(str, run), *conf], env=env,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True))

    def text(self) -> str:
        return "\n".join(log.read_text(errors="replace") for log in self.logs)

    def check_alive(self) -> None:
        for proc, log in zip(self.procs, self.logs, strict=True):
            if proc.poll() is not None:
                raise RuntimeError(f"kafka-eos run exited {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")

    def stop(self, bound_s: float = 90.0) -> list[int | None]:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + bound_s
        for proc in self.procs:
            try:
                proc.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        return [proc.returncode for proc in self.procs]


def run_arm(bootstrap: str, n: int, separate: bool, a: argparse.Namespace, log: Log) -> dict:
    from integration_tests.kafka_tools import check_exactly_once, create_topic, unique
    with tempfile.TemporaryDirectory(prefix="bench-groups-") as tmp:
        folder = Path(tmp)
        (folder / "checkpoints").mkdir()
        tag = unique(f"g{n}{'s' if separate else 'g'}")
        names = [f"{tag}-p{i}" for i in range(n)]
        inputs = [create_topic(bootstrap, f"{name}-in", 2) for name in names]
        outputs = [create_topic(bootstrap, f"{name}-out", 2) for name in names]
        files = [copy_pipeline(folder, *trio) for trio in zip(names, inputs, outputs, strict=True)]
        feed = PacedInput(bootstrap, inputs, a.rate)
        feed.start()
        load_start, started = load_avg(), time.monotonic()
        arm, pss = Arm(files, separate, bootstrap, folder / "checkpoints", folder, a.conf), PssSeries()
        first: dict[str, float] = {}
        try:
            while len(first) < n:  # every pipeline's first committed batch
                arm.check_alive()
                failed = FAILED.findall(arm.text())
                if failed or time.monotonic() - started > a.first_commit_bound:
                    raise ArmFailed(f"{len(first)} of {n} pipelines committed within {time.monotonic() - started:.0f} s; "
                                    f"{len(failed)} failed: {failed[:3]}", first)
                for b in batches(arm.text()):
                    first.setdefault(b.name, round(time.monotonic() - started, 1))
                time.sleep(0.5)
            log(f"{n} {'separate' if separate else 'group'}: every first commit after {max(first.values())} s")
            time.sleep(a.settle)
            seen_before, window_start = len(batches(arm.text())), time.monotonic()
            while time.monotonic() - window_start < a.window:
                arm.check_alive()
                pss.add(tree_rows([p.pid for p in arm.procs]))
                time.sleep(max(0.0, SAMPLE_S - (time.monotonic() - window_start) % SAMPLE_S))
            window = batches(arm.text())[seen_before:]
            window_s, load_window = time.monotonic() - window_start, load_avg()
            feed.halt.set()
            feed.join(90)
            drained_s = drain(arm, {name: feed.sent[t] for name, t in zip(names, inputs, strict=True)}, started)
        finally:
            feed.halt.set()
            codes = arm.stop()
        checks = {name: check_exactly_once(bootstrap, out, ids=feed.sent[inp], id_of=lambda m: int(m.value()))
                  for name, inp, out in zip(names, inputs, outputs, strict=True)}
    return {"n": n, "arm": "separate" if separate else "group", "rate_total_per_s": a.rate,
            "window_s": round(window_s, 1), "load_avg_1m": {"start": load_start, "window_end": load_window,
                                                            "end": load_avg()},
            "first_commit_s": {"all": max(first.values()), "first": min(first.values())},
            "pss": pss.summary(), **pipeline_figures(window, window_s), "drained_s": drained_s, "exit_codes": codes,
            "produce_errors": feed.errors, "records_in": sum(feed.sent.values()),
            "exactly_once": all(c.ok and c.records == c.expected for c in checks.values()),
            "checks": {name: c.line() for name, c in checks.items()}}


class ArmFailed(RuntimeError):
    def __init__(self, message: str, first: dict[str, float]) -> None:
        super().__init__(message)
        self.first = first


def drain(arm: Arm, expected: dict[str, int], started: float, bound_s: float = 180.0) -> float | None:
    """Wait until every pipeline's ``out`` sum reaches its input count; seconds since the start (None: bound)."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        written: dict[str, int] = {}
        for b in batches(arm.text()):
            written[b.name] = written.get(b.name, 0) + b.written
        if all(written.get(name, 0) >= count for name, count in expected.items()):
            return round(time.monotonic() - started, 1)
        time.sleep(1.0)
    return None


def measure(bootstrap: str, a: argparse.Namespace, log: Log) -> dict:
    counts = [int(c) for c in a.counts.split(",")]
    separate = {int(c) for c in a.separate.split(",") if c}
    runs: list[dict] = []
    failed: list[dict] = []
    for r in range(a.rounds):
        for n in counts:
            arms = [False, True] if n in separate else [False]
            for sep in arms if r % 2 == 0 else arms[::-1]:
                try:
                    run = {**run_arm(bootstrap, n, sep, a, log), "round": r}
                except ArmFailed as exc:  # kept as a result: the arm did not start every pipeline
                    failed.append({"n": n, "arm": "separate" if sep else "group", "round": r, "failed": str(exc),
                                   "first_commit_s": exc.first, "load_avg_1m": load_avg()})
                    log(f"{failed[-1]['arm']} N={n} FAILED: {exc}")
                    continue
                runs.append(run)
                log(line(run))
    return {"counts": counts, "separate": sorted(separate), "not_run": not_run(runs, counts, separate),
            "rounds": a.rounds, "conf": a.conf, "window_s": a.window, "settle_s": a.settle, "rate_total_per_s": a.rate,
            "record_bytes": RECORD_BYTES, "runs": runs, "failed": failed, "summary": summary(runs)}


def main(argv: list[str] | None = None) -> None:
    import json

    from bench.common import write_result
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    a = options(argv)

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} load {load_avg()}] {message}", flush=True)
    with LocalKafkaCluster() as cluster:
        result = measure(cluster.bootstrap, a, log)
    path = write_result("pipeline-groups" + ("-quick" if a.quick else ""), result)
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result["summary"], indent=2))
    print(f"written {path}")


if __name__ == "__main__":
    main()
