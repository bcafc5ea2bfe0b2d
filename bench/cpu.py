"""CPU seconds per million records of one Spark run, per process role, over its timed batches.

A background thread samples, every ``interval`` seconds, the cumulative CPU time (user +
system) of every process in the spark-submit tree (roles of ``bench.memory.role``: the JVM, the
Python driver, the driver-side Python runners, the Python task workers) and of the broker
processes passed in. A process that exits keeps its last sample, so short-lived workers count.
``per_million`` takes the CPU spent between the samples nearest the first timed batch's start and
the last batch's end, divided by the timed records: the whole machine's work per record, the
broker's included (on a 2-core machine the pipeline is CPU bound, so this is where the time goes).
"""
from __future__ import annotations

import time

import psutil

from bench.memory import role
from bench.sampling import PeriodicSampler

BROKER = "broker"


class CpuSampler(PeriodicSampler):
    def __init__(self, pid: int, script: str, broker_pids: tuple[int, ...] = (), interval: float = 0.5) -> None:
        self.root, self.script, self.interval = psutil.Process(pid), script, interval
        self.brokers = [psutil.Process(p) for p in broker_pids if psutil.pid_exists(p)]
        self.last: dict[int, tuple[str, float]] = {}  # pid -> (role, cumulative CPU seconds)
        self.samples: list[tuple[float, dict[str, float]]] = []  # (epoch seconds, role -> CPU seconds)
        super().__init__()

    def _processes(self) -> list[tuple[psutil.Process, str | None]]:
        tree = [self.root, *self.root.children(recursive=True)]
        return [(p, role(p, self.script)) for p in tree] + [(b, BROKER) for b in self.brokers]

    def sample(self) -> None:
        now = time.time()
        for proc, kind in self._processes():
            if kind is None:
                continue
            try:
                times = proc.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            self.last[proc.pid] = (kind, times.user + times.system)
        totals: dict[str, float] = {}
        for kind, seconds in self.last.values():
            totals[kind] = totals.get(kind, 0.0) + seconds
        self.samples.append((now, totals))

    def _at(self, moment: float) -> dict[str, float]:
        return min(self.samples, key=lambda s: abs(s[0] - moment))[1] if self.samples else {}

    def per_million(self, per_batch: list[dict], steady_records: int) -> dict:
        """CPU seconds per million records per role over the timed batches (all but the first)."""
        timed = per_batch[1:]
        if not timed or not steady_records or not self.samples:
            return {}
        start = timed[0]["start_s"]
        end = max(b["start_s"] + b["ms"]["triggerExecution"] / 1000 for b in timed)
        before, after = self._at(start), self._at(end)
        spent = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
        out = {f"{k}_s_per_m": round(v / steady_records * 1e6, 2) for k, v in sorted(spent.items())}
        out["total_s_per_m"] = round(sum(spent.values()) / steady_records * 1e6, 2)
        out["cores_busy"] = round(sum(spent.values()) / max(end - start, 1e-3), 2)
        out["window_s"] = round(end - start, 2)
        return out
