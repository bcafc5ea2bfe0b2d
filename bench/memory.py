"""Peak memory of a spark-submit process tree, sampled with psutil in a background thread.

Every ``interval`` seconds the sampler walks the tree under the spark-submit process and sums
the resident set size (RSS) per role:
  driver_jvm     the ``java`` process (in local mode it is the driver and the executor JVM);
  driver_python  the Python process running the job script (the PySpark driver);
  driver_runners Python processes the JVM starts for driver-side work of Python data sources
                 (lookup, planning, writer creation, streaming source runner: daemons and
                 runners of ``pyspark.sql.*`` modules);
  workers        Python workers running tasks (``pyspark.daemon pyspark.worker`` and its forks).
The peak of each role is the highest per-sample sum; ``driver`` is the peak of the three driver
roles together, ``total`` the peak of the whole tree.
Forked workers share copy-on-write pages with the daemon, so summed RSS overstates them a
little; ``total_pss`` (proportional set size, shared pages split) is the unbiased tree total.
``processes()`` is the per-process breakdown at the sample with the highest ``total_pss``: each
process's role, what it runs (``label``) and its PSS / USS (private pages) / RSS in MB.
"""
from __future__ import annotations

import psutil

from bench.sampling import PeriodicSampler

ROLES = ("driver_jvm", "driver_python", "driver_runners", "workers")
TOTALS = ("driver", "total", "total_pss")
MB = 1024 * 1024


def role(proc: psutil.Process, script: str) -> str | None:
    """The role of one process of the tree, from its command line (None: not counted)."""
    try:
        cmd = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return role_of(cmd, script)


def role_of(cmd: list[str], script: str) -> str | None:
    """The role of a command line in a tree whose driver runs ``script`` (None: not counted)."""
    if not cmd:
        return None
    exe = cmd[0].rsplit("/", 1)[-1]
    line = " ".join(cmd)
    if exe == "java":
        return "driver_jvm"
    if not exe.startswith("python"):
        return None  # the spark-submit / spark-class shell wrappers
    if script in line:
        return "driver_python"
    if cmd[-1] == "pyspark.worker" or ("pyspark.daemon" in line and "pyspark.sql." not in line):
        return "workers"
    return "driver_runners"


def label(proc: psutil.Process, cmd: list[str]) -> str:
    """What a Python process runs: its module (``pyspark.daemon``, ``pyspark.sql.worker.…``), and
    ``fork`` when its parent runs the same command (a worker forked by its daemon)."""
    exe = cmd[0].rsplit("/", 1)[-1] if cmd else "?"
    if exe == "java" or not exe.startswith("python"):
        return exe
    what = " ".join(cmd[cmd.index("-m") + 1:]) if "-m" in cmd else cmd[-1].rsplit("/", 1)[-1]
    try:
        parent = proc.parent()
        forked = parent is not None and parent.cmdline() == cmd
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        forked = False
    return what + (" (fork)" if forked else "")


class TreeSampler(PeriodicSampler):
    """Samples the process tree of ``pid`` until ``stop()``; ``peaks()`` gives MB per role."""

    def __init__(self, pid: int, script: str, interval: float = 0.25) -> None:
        self.root, self.script, self.interval = psutil.Process(pid), script, interval
        self.peak = {name: 0 for name in (*ROLES, *TOTALS)}
        self.samples = 0
        self.seen_cmdlines: dict[str, str] = {}
        self.at_peak: list[dict] = []
        super().__init__()

    def sample(self) -> None:
        sums = {name: 0 for name in (*ROLES, *TOTALS)}
        rows = []
        for proc in [self.root, *self.root.children(recursive=True)]:
            kind = role(proc, self.script)
            try:
                cmd = proc.cmdline()
                full = proc.memory_full_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            rss, pss = full.rss, getattr(full, "pss", full.rss)
            sums["total"] += rss
            sums["total_pss"] += pss
            if kind:
                sums[kind] += rss
                self.seen_cmdlines.setdefault(kind + ":" + str(proc.pid), " ".join(cmd)[:160])
            rows.append({"pid": proc.pid, "role": kind or "other", "label": label(proc, cmd), "pss": pss,
                         "uss": getattr(full, "uss", rss), "rss": rss})
        if sums["total_pss"] > self.peak["total_pss"]:
            self.at_peak = rows
        sums["driver"] = sums["driver_jvm"] + sums["driver_python"] + sums["driver_runners"]
        self.samples += 1
        for name, value in sums.items():
            self.peak[name] = max(self.peak[name], value)

    def peaks(self) -> dict:
        """Peak MB per role, plus ``driver`` (JVM + Python driver + runners, peak of the sum)."""
        out = {f"{name}_mb": round(value / MB) for name, value in self.peak.items()}
        out["samples"] = self.samples
        out["processes"] = self.processes()
        return out

    def processes(self) -> list[dict]:
        """Every process at the sample of the highest ``total_pss``: PSS / USS / RSS in MB."""
        return [{**row, **{k: round(row[k] / MB, 1) for k in ("pss", "uss", "rss")}}
                for row in sorted(self.at_peak, key=lambda r: (r["role"], r["label"], r["pid"]))]
