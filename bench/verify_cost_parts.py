"""The parts of ``bench.verify_cost``: a ``kafka-eos`` process with its lines timed and its CPU
sampled, the orders pipeline file, the figures read from its progress lines and its follower's
(other benches share these), and the summary of the arms' runs against the goals.
"""
from __future__ import annotations

import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import yaml

from bench import method
from bench.cpu import CpuSampler
from kafka_eos.connectors.spark_harness import python_env

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "config" / "pipelines" / "orders-json.yaml"
SCHEMA = REPO / "config" / "schemas" / "order.avsc"
CLI = "kafka_eos.connectors.cli"
GOALS = {"follow": 0.95, "follow_recompute": 0.90}  # the least ratio to ``alone`` each goal allows
BATCH_LINE = re.compile(r"batch (\d+): (\d+) in, .*?batch (\d+) ms")
FOLLOW_LINE = re.compile(r"batch(?:es)? (\d+)(?:-(\d+))?: (\d+ [^(]*?) \(([\d,]+) records"
                         r"(?:, ([\d.]+)-([\d.]+) s after their commit)?")
RECOMPUTED_LINE = re.compile(r"recomputed batch (\d+): ([\d,]+) records")


class Lines:
    """A process's output, each line with the moment it arrived, also written to ``log``."""

    def __init__(self, proc: subprocess.Popen, log: Path) -> None:
        self.lines: list[tuple[float, str]] = []
        self.log = log
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        with open(self.log, "w") as out:
            for line in proc.stdout:
                self.lines.append((time.time(), line.rstrip("\n")))
                out.write(line)
                out.flush()

    def tail(self, n: int = 40) -> str:
        return "\n".join(text for _, text in self.lines[-n:] if "\tat " not in text)


def start(args: list[str], log: Path) -> tuple[subprocess.Popen, Lines, CpuSampler]:
    """``kafka-eos <args>`` as its own process group, its lines read and its tree's CPU sampled."""
    proc = subprocess.Popen([sys.executable, "-m", CLI, *args], env=python_env(), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return proc, Lines(proc, log), CpuSampler(proc.pid, CLI).start()


def cpu_total(sampler: CpuSampler) -> dict:
    """The tree's CPU seconds (last sample of every process seen), per role and in total."""
    sampler.stop()
    last = sampler.samples[-1][1] if sampler.samples else {}
    return {**{k: round(v, 2) for k, v in sorted(last.items())}, "total": round(sum(last.values()), 2)}


def steady_cpu(sampler: CpuSampler, rounds: list[dict]) -> dict | None:
    """The follower's CPU seconds from its first round's line to its last, over the batches judged
    in the rounds after the first: its cost per batch without its start (imports, a JVM's launch
    before batch 0's re-run)."""
    if len(rounds) < 2 or not sampler.samples:
        return None
    first, last = rounds[0]["at"], rounds[-1]["at"]
    spent = sum(sampler._at(last).values()) - sum(sampler._at(first).values())
    batches = sum(r["last"] - r["first"] + 1 for r in rounds[1:])
    records = sum(r["records"] for r in rounds[1:])
    return {"cpu_s": round(spent, 2), "batches": batches, "records": records, "window_s": round(last - first, 2),
            "cpu_s_per_1000_batches": round(spent / batches * 1000) if batches else None,
            "cpu_s_per_m_records": round(spent / records * 1e6, 2) if records else None}


def broker_cpu(pids: tuple[int, ...]) -> float:
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def pipeline_file(directory: Path, bootstrap: str, source: str, sink: str, max_offsets: int) -> Path:
    """orders-json.yaml on the bench's topics: trigger 0 s, ``max_offsets`` a batch, records that are
    not orders skipped (no DLQ topic), a checkpoint and a transactional id prefix of its own."""
    from integration_tests.kafka_tools import unique
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["name"] = "verify-cost"
    doc["source"]["kafka"]["bootstrap_servers"] = bootstrap
    doc["sink"]["kafka"] = doc["source"]["kafka"]
    doc["source"]["topics"], doc["sink"]["topic"] = [source], sink
    doc["source"]["schema"]["file"] = str(SCHEMA)
    doc["source"]["max_offsets_per_trigger"] = max_offsets
    doc["sink"]["transactional_id_prefix"] = unique("vcost")
    doc["checkpoint"] = {"location": str(directory / "checkpoint"), "trigger": "0 seconds"}
    doc["errors"] = {"on_decode_error": "skip"}
    path = directory / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def pipeline_figures(lines: list[tuple[float, str]]) -> dict:
    """Per batch (records read, ms, when its line came) and the rates: ``records_per_s`` over the
    batches after the first (their records / the sum of their durations), ``wall_records_per_s``
    from batch 0's start to the last batch's line."""
    batches = [(int(m[1]), int(m[2]), int(m[3]), at) for at, line in lines if (m := BATCH_LINE.search(line))]
    if len(batches) < 2:
        raise RuntimeError("fewer than 2 batch lines in the pipeline's output")
    steady = batches[1:]
    read = sum(b[1] for b in batches)
    began = batches[0][3] - batches[0][2] / 1000
    return {"batches": len(batches), "records_read": read,
            "records_per_s": round(sum(b[1] for b in steady) / (sum(b[2] for b in steady) / 1000)),
            "wall_records_per_s": round(read / (batches[-1][3] - began)),
            "batch_ms": method.summary([b[2] for b in batches]),
            "first_batch_at": round(began, 3), "last_batch_at": round(batches[-1][3], 3),
            "batch_line_at": {b[0]: round(b[3], 3) for b in batches}}


def follower_figures(lines: list[tuple[float, str]], batch_line_at: dict[int, float]) -> dict:
    """The follower's rounds (batches judged, delays after their commit) and its re-runs: when each
    "recomputed batch N" line came; ``rerun_gap_s``: the time since the follower's previous line,
    for re-runs of consecutive batches in back-to-back rounds (the follower behind: no idle wait)."""
    rounds, reruns, previous = [], [], None
    for at, line in lines:
        if (m := FOLLOW_LINE.search(line)):
            rounds.append({"first": int(m[1]), "last": int(m[2] or m[1]), "outcomes": m[3], "at": round(at, 3),
                           "records": int(m[4].replace(",", "")),
                           "delay_s": None if m[5] is None else [float(m[5]), float(m[6])]})
        elif (m := RECOMPUTED_LINE.search(line)):
            batch = int(m[1])
            since_commit = at - batch_line_at[batch] if batch in batch_line_at else None
            reruns.append({"batch": batch, "at": round(at, 3), "records": int(m[2].replace(",", "")),
                           "after_commit_line_s": None if since_commit is None else round(since_commit, 2),
                           "since_previous_line_s": None if previous is None else round(at - previous, 2)})
        previous = at
    delays = [r["delay_s"][1] for r in rounds if r["delay_s"]]
    # a re-run after another one, or after a round that left batches pending, started at once
    gaps = [r["since_previous_line_s"] for i, r in enumerate(reruns)
            if i and r["since_previous_line_s"] is not None and reruns[i - 1]["batch"] == r["batch"] - 1
            and _behind(rounds, reruns[i - 1]["at"], r["at"])]
    return {"rounds": rounds, "reruns": reruns,
            "delay_max_s": max(delays) if delays else None,
            "delay_median_s": statistics.median(delays) if delays else None,
            "rerun_gap_s": round(statistics.median(gaps), 2) if gaps else None, "rerun_gaps": len(gaps)}


def _behind(rounds: list[dict], since: float, until: float) -> bool:
    """No round ended between ``since`` and ``until`` that had caught up (each one between left
    batches pending: the next started without waiting). Rounds that judged several batches count as
    behind; a round of one batch between the two re-runs may have waited, so it does not."""
    between = [r for r in rounds if since <= r["at"] <= until]
    return all(r["last"] > r["first"] for r in between)


def wait_for_line(proc: tuple, pattern: re.Pattern, bound_s: float) -> None:
    deadline = time.time() + bound_s
    while not any(pattern.search(line) for _, line in proc[1].lines):
        if proc[0].poll() is not None or time.time() > deadline:
            raise RuntimeError(f"no line {pattern.pattern!r} in {bound_s:.0f} s:\n{proc[1].tail()}")
        time.sleep(0.2)


def summarize(runs: dict[str, list[dict]]) -> dict:
    rates = {arm: [r["records_per_s"] for r in rs] for arm, rs in runs.items()}
    out: dict = {"records_per_s": {arm: method.summary(v) for arm, v in rates.items()},
                 "wall_records_per_s": {arm: method.summary([r["wall_records_per_s"] for r in rs])
                                        for arm, rs in runs.items()},
                 "ratio_to_alone": {}, "follower": {}, "goals": {}}
    for arm, rs in runs.items():
        out.setdefault("pipeline_cpu_s_per_m", {})[arm] = round(statistics.median(
            r["pipeline_cpu_s"]["total"] / r["records_read"] * 1e6 for r in rs), 2)
        if arm != "alone" and "alone" in rates:
            out["ratio_to_alone"][arm] = method.round_ratios(rates[arm], rates["alone"])
        followed = [r for r in rs if "follower" in r]
        if not followed:
            continue
        cpu = [r["follower_cpu_s"]["total"] for r in followed]
        during = [round(r["follower_cpu_s"]["total"] - r.get("follower_cpu_before_run_s", 0.0), 2) for r in followed]
        reruns = [x for r in followed for x in r["follower"]["reruns"]]
        first = [r["follower"]["reruns"][0]["after_commit_line_s"] for r in followed if r["follower"]["reruns"]]
        gaps = [r["follower"]["rerun_gap_s"] for r in followed if r["follower"]["rerun_gap_s"] is not None]
        out["follower"][arm] = {
            "cpu_s": method.summary(cpu),
            "cpu_s_during_run": method.summary(during),   # without a re-run session's start (before the run)
            "session_ready_s": [r["session_ready_s"] for r in followed if "session_ready_s" in r],
            "cpu_s_per_1000_batches": round(statistics.median(
                r["follower_cpu_s"]["total"] / r["committed_batches"] * 1000 for r in followed)),
            "cpu_s_per_m_records": round(statistics.median(
                r["follower_cpu_s"]["total"] / r["records_read"] * 1e6 for r in followed), 2),
            "steady_cpu_s_per_1000_batches": _median([(r.get("follower_steady") or {}).get("cpu_s_per_1000_batches")
                                                      for r in followed]),
            "steady_cpu_s_per_m_records": _median([(r.get("follower_steady") or {}).get("cpu_s_per_m_records")
                                                   for r in followed]),
            "catch_up_s": [r["catch_up_s"] for r in followed],
            "delay_max_s": [r["follower"]["delay_max_s"] for r in followed],
            "every_batch_verified": all(r["every_batch_verified"] for r in followed),
            "reruns_per_run": [len(r["follower"]["reruns"]) for r in followed],
            "first_rerun_after_commit_line_s": first,
            "rerun_s_per_batch": statistics.median(gaps) if gaps else None,
            "reruns_timed": len(reruns)}
    for arm, least in GOALS.items():
        ratio = out["ratio_to_alone"].get(arm)
        out["goals"][arm] = {"goal": f"cost < {round((1 - least) * 100)} % of the pipeline's throughput",
                             "ratio_median": ratio and ratio["median"],
                             "met": None if ratio is None else ratio["median"] >= least}
    return out


def _median(values: list) -> float | None:
    kept = [v for v in values if v is not None]
    return round(statistics.median(kept), 2) if kept else None


def lines(result: dict) -> list[str]:
    rate, ratio, inp = result["records_per_s"], result["ratio_to_alone"], result["input"]
    out = [f"verify cost ({inp['records']:,} orders, {inp['partitions']} partitions, batches of "
           f"{inp['max_offsets_per_trigger']:,}, trigger 0 s) records/s, median [min-max]: "
           + ", ".join(f"{a} {s['median']:,} [{s['min']:,}-{s['max']:,}]{' NOISY' if s['noisy'] else ''}"
                       for a, s in rate.items())]
    if ratio:
        out.append("verify cost, ratio to alone (median of per-round [min-max]): "
                   + ", ".join(f"{a} {v['median']} [{v['min']}-{v['max']}]" for a, v in ratio.items()))
    for arm, f in result["follower"].items():
        out.append(f"verify cost, follower {arm}: CPU {f['cpu_s']['median']} s [{f['cpu_s']['min']}-"
                   f"{f['cpu_s']['max']}] a run, {f['cpu_s_per_1000_batches']:,} s per 1,000 batches, "
                   f"{f['cpu_s_per_m_records']} s per million records (after its first round: "
                   f"{f['steady_cpu_s_per_1000_batches']} s per 1,000 batches, {f['steady_cpu_s_per_m_records']} s per "
                   f"million records); caught up {f['catch_up_s']} s after the run; "
                   f"delay max {f['delay_max_s']} s; every batch verified {f['every_batch_verified']}"
                   + (f"; re-runs {f['reruns_per_run']}, the first {f['first_rerun_after_commit_line_s']} s after "
                      f"its batch's line, then {f['rerun_s_per_batch']} s a batch" if f["reruns_timed"] else ""))
    out.append("verify cost, pipeline CPU s per million records: "
               + ", ".join(f"{a} {v}" for a, v in result["pipeline_cpu_s_per_m"].items()))
    for arm, g in result["goals"].items():
        out.append(f"verify cost goal {arm}: {g['goal']}: ratio {g['ratio_median']}, met {g['met']}")
    return out
