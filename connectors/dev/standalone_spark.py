"""A real Spark standalone cluster (Master + Workers) on loopback, from pip pyspark's spark-class.

Invariants: every process gets free ports and its own log under ``workdir``; each Worker has
its own work dir; Workers run Python tasks with the interpreter running this code
(PYSPARK_PYTHON), so executors import the same kafka-eos. ``kill_worker`` SIGKILLs a Worker
and its executors (the failure the chaos suite injects).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_eos.connectors.dev.local_kafka import free_port
from kafka_eos.connectors.dev.processes import cmdline, descendants
from kafka_eos.connectors.spark_harness import python_env


def spark_class() -> str:
    import pyspark
    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


@dataclass
class StandaloneSpark:
    workers: int = 2
    cores_per_worker: int = 1
    memory_per_worker: str = "1g"
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kafka-eos-spark-")))
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = python_env()
        env.update({"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_MASTER_HOST": "127.0.0.1",
                    "SPARK_LOG_DIR": str(self.workdir), "SPARK_DAEMON_MEMORY": "256m"})
        return env

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")
        self.processes[name] = subprocess.Popen([spark_class(), *args], env=self._env(), stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)

    def start(self, timeout_s: float = 90) -> "StandaloneSpark":
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(free_port())])
        self._wait("master", r"I have been elected leader", timeout_s)
        for n in range(1, self.workers + 1):
            self.start_worker(n, timeout_s)
        return self

    def start_worker(self, n: int, timeout_s: float = 90) -> None:
        name = f"worker-{n}"
        workdir = self.workdir / name
        workdir.mkdir(exist_ok=True)
        (self.workdir / f"{name}.log").unlink(missing_ok=True)
        self._spawn(name, ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                           "--cores", str(self.cores_per_worker), "--memory", self.memory_per_worker,
                           "--webui-port", str(free_port()), "--work-dir", str(workdir)])
        self._wait(name, r"Successfully registered with master", timeout_s)

    def kill_worker(self, n: int) -> None:
        """SIGKILL Worker n and everything it runs (executors and their Python workers)."""
        proc = self.processes.pop(f"worker-{n}")
        victims = [proc.pid, *descendants(proc.pid)]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(30)

    def executor_pids(self, n: int) -> list[int]:
        """Executor JVMs launched by Worker n (they are its child processes)."""
        proc = self.processes.get(f"worker-{n}")
        if proc is None:
            return []
        return [pid for pid in descendants(proc.pid) if "CoarseGrainedExecutorBackend" in cmdline(pid)]

    def stop(self) -> None:
        for name in [name for name in self.processes if name.startswith("worker-")]:
            self.kill_worker(int(name.split("-")[1]))
        for proc in list(self.processes.values()):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.processes.clear()

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.workdir / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def _wait(self, name: str, pattern: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        path = self.workdir / f"{name}.log"
        while time.monotonic() < deadline:
            if path.exists() and re.search(pattern, path.read_text(errors="replace")):
                return
            if self.processes[name].poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError(f"Spark {name} did not start:\n{self.log_tail(name)}")

    def __enter__(self) -> "StandaloneSpark":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
