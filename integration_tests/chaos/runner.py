"""Chaos run: an exactly-once pipeline under seeded faults, restarted from its checkpoint after
each crash, then checked id by id.

    python -m integration_tests.chaos.runner --records 200000 --faults 20 --seed 7 [--brokers 3] [--standalone]

Exit status 1 on any lost, duplicated, aborted-input or out-of-order record; the seed is printed
first so a failing run can be replayed.
"""
from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster
from connectors.dev.standalone_spark import StandaloneSpark
from integration_tests.chaos import injector
from integration_tests.chaos.checker import Report, check
from integration_tests.chaos.generator import generate
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_runs import kill_group, run_to_completion, start_job, tail


@dataclass(frozen=True)
class ChaosSettings:
    records: int = 20_000
    faults: int = 5
    seed: int = 1
    brokers: int = 1
    standalone: bool = False
    partitions: int = 3

    def kinds(self) -> tuple[str, ...]:
        return ("driver", "python_worker", "broker") + (("spark_worker",) if self.standalone else ())


class ChaosRun:
    def __init__(self, settings: ChaosSettings, workdir: Path, stack: ExitStack) -> None:
        self.s, self.workdir = settings, workdir
        self.kafka = stack.enter_context(LocalKafkaCluster(ClusterSettings(nodes=settings.brokers)))
        self.spark = stack.enter_context(StandaloneSpark(workers=2)) if settings.standalone else None
        self.input, self.output = unique("chaos-in"), unique("chaos-out")
        self.prefix = unique("chaos")
        self.log = workdir / "job.log"
        self.job: subprocess.Popen | None = None
        self.restarts = 0

    def args(self, streaming: bool) -> list[str]:
        args = ["--bootstrap", self.kafka.bootstrap, "--input", self.input, "--output", self.output,
                "--checkpoint", str(self.workdir / "checkpoint"), "--prefix", self.prefix,
                "--max-offsets", str(max(500, self.s.records // 40)), "--transaction-timeout-ms", "60000"]
        return args + (["--trigger", "1", "--run-seconds", "3600"] if streaming else [])

    def master(self) -> str:
        return self.spark.master_url if self.spark else "local[2,4]"

    def ensure_job(self) -> None:
        if self.job is None or self.job.poll() is not None:
            if self.job is not None:
                self.restarts += 1
            self.job = start_job(self.args(streaming=True), self.log, master=self.master())

    def inject(self, fault: injector.Fault) -> str:
        if fault.kind == "driver":
            kill_group(self.job)
            return "driver SIGKILL (process group)"
        if fault.kind == "python_worker":
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.job.poll() is None:
                workers = self.python_workers()
                if workers and injector.kill(workers[0]):
                    return f"python worker SIGKILL (pid {workers[0]}, mid-task)"
                time.sleep(0.05)
            return "python worker SIGKILL: no task ran within 30 s (pipeline idle)"
        if fault.kind == "broker":
            node = self.coordinator() if self.s.brokers > 1 else 1
            self.kafka.stop_node(node, kill=True)
            time.sleep(2)
            self.kafka.start_node(node)
            self.kafka.wait_ready()
            return f"broker {node} SIGKILL + restart" + (" (transaction coordinator)" if self.s.brokers > 1 else "")
        n = fault.target % 2 + 1
        self.spark.kill_worker(n)
        self.spark.start_worker(n)
        return f"spark worker {n} SIGKILL (+ executors) and restart"

    def python_workers(self) -> list[int]:
        if self.spark:
            return [w for n in (1, 2) for e in self.spark.executor_pids(n) for w in injector.python_workers(e)]
        return injector.python_workers(self.job.pid)

    def coordinator(self) -> int:
        from kafka.protocol.metadata import CoordinatorType
        from txn.control_plane import control_plane
        client = control_plane({"bootstrap.servers": self.kafka.bootstrap})
        try:
            return client._manager.run(client._find_coordinator_id, f"{self.prefix}-0-0", CoordinatorType.TRANSACTION)
        except Exception:  # noqa: BLE001 - unknown yet: any node
            return 1

    def run(self) -> Report:
        rng = random.Random(self.s.seed)
        generate(self.kafka.bootstrap, self.input, self.s.records, self.s.partitions, rng)
        faults = injector.plan(self.s.seed, self.s.faults, self.s.kinds())
        for number, fault in enumerate(faults, 1):
            self.ensure_job()
            time.sleep(fault.after_s)
            what = self.inject(fault)
            print(f"[chaos seed={self.s.seed}] fault {number}/{len(faults)} after {fault.after_s}s: {what}", flush=True)
        if self.job and self.job.poll() is None:
            kill_group(self.job)
        self.restarts += 1
        run_to_completion(self.args(streaming=False), self.log, timeout=900)
        report = check(self.kafka.bootstrap, self.output, self.s.records)
        print(f"[chaos seed={self.s.seed}] {self.s.records} in, {report.line()}; {len(faults)} faults, "
              f"{self.restarts} pipeline restarts", flush=True)
        if not report.ok:
            print(tail(self.log, 80), file=sys.stderr)
        return report


def run(settings: ChaosSettings, workdir: Path | None = None) -> Report:
    with ExitStack() as stack:
        directory = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kafka-eos-chaos-")))
        return ChaosRun(settings, directory, stack).run()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--faults", type=int, default=20)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    p.add_argument("--brokers", type=int, default=1, choices=[1, 3])
    p.add_argument("--standalone", action="store_true", help="a Spark standalone cluster (Master + 2 Workers)")
    a = p.parse_args()
    print(f"[chaos] seed={a.seed} (replay with --seed {a.seed})", flush=True)
    report = run(ChaosSettings(a.records, a.faults, a.seed, a.brokers, a.standalone))
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
