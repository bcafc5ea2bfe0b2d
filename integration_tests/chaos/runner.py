"""Chaos run: an exactly-once pipeline under seeded faults, restarted from its checkpoint after
each crash, then checked id by id.

    python -m integration_tests.chaos.runner --records 200000 --faults 20 --seed 7 \
        [--brokers 3] [--standalone] [--live-start]

With --live-start the input keeps arriving while the query starts with Spark's default
``startingOffsets=latest`` and while the faults hit it; every committed input record at or after
the query's planned start (read from the checkpoint) must then be in the output exactly once.

With --brokers 3 the faults include network faults of one broker (``network_faults``): hung
(SIGSTOP), black hole (every packet to and from it dropped) and lossy link (7% dropped), each for
18-60 s and then healed; the query must ride them out.

With --container the broker is a container and ``container_faults`` replace broker kills: paused
(fenced at the unpause) or cut off its network for 18-60 s, then healed; the query must ride them
out. Where no container engine answers, the run stops at once naming the reason.

Exit status 1 on any lost, duplicated, aborted-input or out-of-order record, an unplanned query
stop (the job exiting when no fault killed the driver: it is restarted, but counted), or an output
partition whose last stable offset is still below its high watermark ``RELEASE_BOUND_S`` after the
final (planned) stop of the query; the seed is printed first so a failing run can be replayed.
"""
from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster
from kafka_eos.connectors.dev.standalone_spark import StandaloneSpark
from integration_tests import network_faults
from integration_tests.chaos import container_faults, injector
from integration_tests.chaos.generator import generate
from integration_tests.kafka_tools import (ExactlyOnceReport, check_exactly_once, committed_input_ids, create_topic,
                                          unique, wait_released)
from integration_tests.pipeline_runs import kill_group, planned_start, run_to_completion, start_job, tail


JOB_START_S = 20.0  # spark-submit to the first batch on a 2-core machine
RELEASE_BOUND_S = 10.0  # after a planned stop, every output partition's LSO == high watermark by then


@dataclass(frozen=True)
class ChaosSettings:
    records: int = 20_000
    faults: int = 5
    seed: int = 1
    brokers: int = 1
    standalone: bool = False
    partitions: int = 3
    live_start: bool = False  # startingOffsets=latest while the input is being written
    container: bool = False  # the one broker is a container: container faults instead of broker kills
    emit_ranges: bool = False  # a copy: the source emits offset ranges and the sink reads the records

    def __post_init__(self) -> None:
        if self.container and self.brokers > 1:
            raise ValueError("a container run has one broker (the container): brokers=1")

    def kinds(self) -> tuple[str, ...]:
        broker = container_faults.KINDS if self.container else ("broker",)
        return (("driver", "python_worker") + broker + (("spark_worker",) if self.standalone else ())
                + (injector.NETWORK_KINDS if self.brokers > 1 else ()))


class ChaosRun:
    def __init__(self, settings: ChaosSettings, workdir: Path, stack: ExitStack) -> None:
        self.s, self.workdir = settings, workdir
        if settings.container:  # one broker container (ContainerUnavailable names why not)
            self.broker, self.network = stack.enter_context(container_faults.networked_broker())
        else:
            self.kafka = stack.enter_context(LocalKafkaCluster(ClusterSettings(nodes=settings.brokers)))
        self.bootstrap = self.broker.bootstrap if settings.container else self.kafka.bootstrap
        self.spark = stack.enter_context(StandaloneSpark(workers=2)) if settings.standalone else None
        self.input, self.output = unique("chaos-in"), unique("chaos-out")
        self.prefix = unique("chaos")
        self.log = workdir / "job.log"
        self.job: subprocess.Popen | None = None
        self.restarts = 0
        self.planned_stop = False  # set by a driver kill; any other exit of the job is an unplanned stop
        self.unplanned_stops = 0
        if settings.brokers > 1:
            network_faults.ensure_iptables()
            network_faults.remove_stale_rules()

    def args(self, streaming: bool) -> list[str]:
        args = ["--bootstrap", self.bootstrap, "--input", self.input, "--output", self.output,
                "--checkpoint", str(self.workdir / "checkpoint"), "--prefix", self.prefix,
                "--max-offsets", str(max(500, self.s.records // 40)), "--transaction-timeout-ms", "60000",
                "--starting-offsets", "latest" if self.s.live_start else "earliest"]
        args += ["--emit-ranges"] if self.s.emit_ranges else []
        return args + (["--trigger", "1", "--run-seconds", "3600"] if streaming else [])

    def master(self) -> str:
        return self.spark.master_url if self.spark else "local[2,4]"

    def ensure_job(self) -> None:
        if self.job is None or self.job.poll() is not None:
            if self.job is not None:
                self.restarts += 1
                self.note_unplanned_stop()
            self.planned_stop = False
            self.job = start_job(self.args(streaming=True), self.log, master=self.master())

    def note_unplanned_stop(self) -> None:
        """Count an exit of the job no fault planned (the query stopped on its own)."""
        if self.job is not None and self.job.poll() is not None and not self.planned_stop:
            self.unplanned_stops += 1
            print(f"[chaos seed={self.s.seed}] UNPLANNED query stop (exit {self.job.returncode}):\n"
                  f"{tail(self.log, 40)}", flush=True)
            self.planned_stop = True  # counted once

    def inject(self, fault: injector.Fault) -> str:
        if fault.kind == "driver":
            self.planned_stop = True
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
        if fault.kind in injector.NETWORK_KINDS:
            return self.network_fault(fault)
        if fault.kind in container_faults.KINDS:
            return container_faults.hold(self.broker, self.network, fault.kind, injector.hold_s(fault))
        n = fault.target % 2 + 1
        self.spark.kill_worker(n)
        self.spark.start_worker(n)
        return f"spark worker {n} SIGKILL (+ executors) and restart"

    def network_fault(self, fault: injector.Fault) -> str:
        """Hang (SIGSTOP), black-hole or make lossy the link to node ``target`` for ``hold_s``, then heal."""
        node, hold = fault.target, injector.hold_s(fault)
        if fault.kind == "hung_broker":
            fault_context, what = network_faults.hung(self.kafka, node), "SIGSTOP"
        elif fault.kind == "black_hole":
            fault_context, what = network_faults.black_hole(self.kafka, node), "cut off both ways"
        else:
            fault_context = network_faults.dropped(self.kafka, node, probability=injector.LOSSY_PROBABILITY)
            what = f"{injector.LOSSY_PROBABILITY:.0%} of packets dropped"
        with fault_context:
            time.sleep(hold)
        return f"broker {node} {what} for {hold}s, then healed"

    def python_workers(self) -> list[int]:
        if self.spark:
            return [w for n in (1, 2) for e in self.spark.executor_pids(n) for w in injector.python_workers(e)]
        return injector.python_workers(self.job.pid)

    def coordinator(self) -> int:
        from kafka.protocol.metadata import CoordinatorType
        from kafka_eos.txn.cluster.control_plane import control_plane
        client = control_plane({"bootstrap.servers": self.bootstrap})
        try:
            return client._manager.run(client._find_coordinator_id, f"{self.prefix}-0-0", CoordinatorType.TRANSACTION)
        except Exception:  # noqa: BLE001 - unknown yet: any node
            return 1

    def start_input(self, faults: list[injector.Fault]) -> threading.Thread | None:
        """Write the input at once, or (live start) in a thread spread over most of the fault phase."""
        rng = random.Random(self.s.seed)
        if not self.s.live_start:
            generate(self.bootstrap, self.input, self.s.records, self.s.partitions, rng)
            return None
        create_topic(self.bootstrap, self.input, partitions=self.s.partitions)
        chunks = max(1, self.s.records // 1050)  # the generator's mean chunk size
        pause = (JOB_START_S + 0.8 * sum(f.after_s for f in faults)) / chunks
        writer = threading.Thread(target=generate, daemon=True, name="chaos-input",
                                  args=(self.bootstrap, self.input, self.s.records, self.s.partitions, rng),
                                  kwargs={"pause_s": pause, "create": False, "started": self.query_started})
        writer.start()
        time.sleep(min(3.0, 4 * pause))  # some input exists before the query resolves 'latest'
        return writer

    def query_started(self) -> bool:
        """True once batch 0's offsets are in the checkpoint (the query resolved 'latest')."""
        return (self.workdir / "checkpoint" / "offsets" / "0").exists()

    def held_after_stop(self) -> dict[int, tuple[int, int]]:
        """Output partitions an open transaction still holds back ``RELEASE_BOUND_S`` after the stop."""
        waited, held = wait_released(self.bootstrap, self.output, RELEASE_BOUND_S)
        print(f"[chaos seed={self.s.seed}] after the stop: " + (
            f"partitions held (LSO, high watermark): {held}" if held else f"no partition held ({waited:.1f} s)"),
            flush=True)
        return held

    def expected(self) -> set[int] | None:
        if not self.s.live_start:
            return None
        start = planned_start(self.workdir / "checkpoint")
        return committed_input_ids(self.bootstrap, self.input, start)

    def run(self) -> ExactlyOnceReport:
        faults = injector.plan(self.s.seed, self.s.faults, self.s.kinds())
        writer = self.start_input(faults)
        for number, fault in enumerate(faults, 1):
            self.ensure_job()
            time.sleep(fault.after_s)
            what = self.inject(fault)
            print(f"[chaos seed={self.s.seed}] fault {number}/{len(faults)} after {fault.after_s}s: {what}", flush=True)
        if writer is not None:
            writer.join()
        self.note_unplanned_stop()
        if self.job and self.job.poll() is None:
            kill_group(self.job)
        self.restarts += 1
        run_to_completion(self.args(streaming=False), self.log, timeout=900)
        report = check_exactly_once(self.bootstrap, self.output, self.s.records, self.expected(), ordered=True)
        report = replace(report, held=len(self.held_after_stop()), unplanned_stops=self.unplanned_stops)
        print(f"[chaos seed={self.s.seed}] {self.s.records} in, {report.line()}; {len(faults)} faults, "
              f"{self.restarts} pipeline restarts", flush=True)
        if not report.ok:
            print(tail(self.log, 80), file=sys.stderr)
        return report


def run(settings: ChaosSettings, workdir: Path | None = None) -> ExactlyOnceReport:
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
    p.add_argument("--live-start", action="store_true",
                   help="start the query with startingOffsets=latest while the input is being written")
    p.add_argument("--container", action="store_true",
                   help="the broker is a container: pause and network-disconnect faults instead of broker kills")
    p.add_argument("--emit-ranges", action="store_true",
                   help="a copy: source option emit=offsetRanges, the sink reads and writes the records")
    a = p.parse_args()
    print(f"[chaos] seed={a.seed} (replay with --seed {a.seed})", flush=True)
    report = run(ChaosSettings(a.records, a.faults, a.seed, a.brokers, a.standalone, live_start=a.live_start,
                               container=a.container, emit_ranges=a.emit_ranges))
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
