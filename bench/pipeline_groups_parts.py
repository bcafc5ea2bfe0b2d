"""Pure parts of ``bench.pipeline_groups``: progress lines, process roles, PSS samples, figures, the summary."""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

import psutil

from bench.memory import label, role_of

MB = 1024 * 1024
PROGRESS = re.compile(r"^kafka-eos (\S+) batch (\d+): (\d+) in, (\d+) out, .*?batch (\d+) ms", re.M)
ROLES = ("driver_jvm", "driver_python", "driver_runners", "workers", "other")


@dataclass(frozen=True)
class Batch:
    name: str
    batch: int
    read: int
    written: int
    ms: int


def batches(text: str) -> list[Batch]:
    """The committed batches (progress lines counting ``out``) of a run's output."""
    return [Batch(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)))
            for m in PROGRESS.finditer(text)]


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1, nearest rank) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def marginal_mb(pss_group_n: float, pss_group_1: float, n: int) -> float | None:
    """What each pipeline after the first adds: (PSS(group N) - PSS(group 1)) / (N - 1)."""
    return None if n <= 1 else round((pss_group_n - pss_group_1) / (n - 1), 1)


def role(cmd: list[str]) -> str:
    """The role of one process of a ``kafka-eos run`` tree (``bench.memory``'s roles; "other": not counted there)."""
    return role_of(cmd, "connectors.cli") or "other"


def tree_rows(pids: list[int]) -> list[dict]:
    """One row per live process of the trees under ``pids``: role, label, PSS and USS in MB."""
    rows = []
    for pid in pids:
        try:
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for proc in procs:
            try:
                cmd, full = proc.cmdline(), proc.memory_full_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            rows.append({"pid": proc.pid, "role": role(cmd), "label": label(proc, cmd)[:80],
                         "pss": round(full.pss / MB, 1), "uss": round(full.uss / MB, 1)})
    return rows


@dataclass
class PssSeries:
    """PSS samples of a run: the whole (MB) and per role, plus the process list of the last one."""
    totals: list[float] = field(default_factory=list)
    by_role: list[dict[str, float]] = field(default_factory=list)
    last: list[dict] = field(default_factory=list)

    def add(self, rows: list[dict]) -> None:
        per_role = {r: round(sum(row["pss"] for row in rows if row["role"] == r), 1) for r in ROLES}
        self.totals.append(round(sum(per_role.values()), 1))
        self.by_role.append(per_role)
        self.last = rows

    def summary(self) -> dict:
        if not self.totals:
            return {"samples": 0}
        runners = [row for row in self.last if row["role"] == "driver_runners"]
        return {"samples": len(self.totals), "peak_mb": max(self.totals), "median_mb": statistics.median(self.totals),
                "median_by_role_mb": {r: statistics.median(s[r] for s in self.by_role) for r in ROLES},
                "processes_by_role": {r: sum(1 for row in self.last if row["role"] == r) for r in ROLES},
                "runner_pss_mb": sorted(row["pss"] for row in runners),
                "processes": sorted(self.last, key=lambda row: (row["role"], row["label"], row["pid"]))}


def pipeline_figures(found: list[Batch], window_s: float) -> dict:
    """Per pipeline over the steady window: records/s out and batch p50/p95 (ms); then the medians."""
    names = sorted({b.name for b in found})
    per: dict[str, dict] = {}
    for name in names:
        mine = [b for b in found if b.name == name]
        per[name] = {"batches": len(mine), "records_per_s": round(sum(b.written for b in mine) / window_s, 1),
                     "batch_p50_ms": percentile([b.ms for b in mine], 0.5),
                     "batch_p95_ms": percentile([b.ms for b in mine], 0.95), "batch_ms": [b.ms for b in mine]}

    def med(key: str) -> float | None:
        values: list[float] = [p[key] for p in per.values() if p[key] is not None]
        return statistics.median(values) if values else None
    return {"per_pipeline": per, "records_per_s": med("records_per_s"), "batch_p50_ms": med("batch_p50_ms"),
            "batch_p95_ms": med("batch_p95_ms")}


def not_run(runs: list[dict], counts: list[int], separate: set[int], machine_mb: float = 24 * 1024) -> dict:
    """Why the separate arm of a larger N was not run: N x the measured per-driver PSS."""
    measured = [r["pss"]["median_mb"] / r["n"] for r in runs if r["arm"] == "separate" and "median_mb" in r["pss"]]
    if not measured:
        return {}
    per = round(max(measured))
    return {str(n): f"not run: {n} x {per} MB per driver = {n * per:,} MB, " + (
        f"exceeds the machine's {machine_mb:,.0f} MB" if n * per > 0.8 * machine_mb else "would fit; not run (time)")
        for n in counts if n not in separate}


def summary(runs: list[dict]) -> dict:
    """Per arm and N: median of the rounds' PSS medians and peaks; the marginal pipeline from group 1."""
    import statistics
    out: dict = {}
    for run in runs:
        out.setdefault(run["arm"], {}).setdefault(str(run["n"]), []).append(run)
    table: dict = {}
    for arm, by_n in out.items():
        for n, rs in by_n.items():
            table.setdefault(arm, {})[n] = {
                "pss_median_mb": statistics.median(r["pss"]["median_mb"] for r in rs),
                "pss_peak_mb": statistics.median(r["pss"]["peak_mb"] for r in rs),
                "first_commit_s": statistics.median(r["first_commit_s"]["all"] for r in rs),
                "exactly_once": all(r["exactly_once"] for r in rs), "rounds": len(rs)}
    base = table.get("group", {}).get("1")
    for arm in table.values():
        for n, row in arm.items():
            row["marginal_mb"] = marginal_mb(row["pss_median_mb"], base["pss_median_mb"], int(n)) if base else None
    return table


def line(run: dict) -> str:
    p = run["pss"]
    return (f"{run['arm']} N={run['n']}: PSS peak {p.get('peak_mb')} MB, median {p.get('median_mb')} MB "
            f"({p.get('processes_by_role')}), first commit of all {run['first_commit_s']['all']} s, "
            f"{run['records_per_s']} rec/s per pipeline, batch p50 {run['batch_p50_ms']} / p95 {run['batch_p95_ms']} ms, "
            f"exactly once {run['exactly_once']}, load {run['load_avg_1m']}")
