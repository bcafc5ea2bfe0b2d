"""What continuous verification costs a pipeline beside it (issue 59 item 4: goals < 5 % of the
pipeline's throughput for ``verify --follow``, < 10 % with ``--recompute`` on its default sample).

One local broker, one input topic of ``--records`` JSON orders (~100 B, ``PARTITIONS`` partitions,
``demo_data.produce_orders``), written once. A pipeline like ``config/pipelines/orders-json.yaml``
(stateless SQL, exactly-once, trigger 0 s, ``--max-offsets`` a batch: ~20 batches) is run as
``kafka-eos run P --once`` from a fresh checkpoint into a fresh output topic, per run, in arms
(``ARMS``) interleaved over ``--rounds`` rounds, the order rotating each round:
  alone             the pipeline only;
  follow            ``kafka-eos verify --follow P --interval 1`` started just before the run;
  follow_recompute  the same with ``--recompute`` (its default sample: every 100th batch, so batch 0);
  recompute_all     ``--recompute --recompute-every 1``: every batch re-run (the full cost).
A follower is stopped (SIGTERM, exit 143) once the run has ended and its state
(``txn.follow_state.latest_state``) says it verified the last committed batch; how long after the
run's end that took is ``catch_up_s``. Per run: the pipeline's rate (its batches after the first:
records read / the sum of their batch durations, as ``bench.method`` takes a steady state; the
wall rate over every batch and the process's wall time are kept too), the CPU seconds of the
pipeline's and the follower's process trees (``bench.cpu.CpuSampler``) and of the broker, the
follower's delay figures (its lines "batches A-B: ... X-Y s after their commit"), the time its
re-runs took (the arrival times of its "recomputed batch N" lines), and its state (every committed
batch verified, ``aged_out`` 0). Per arm: the median rate with min/max, the median of the per-round
ratios to ``alone``, the follower's CPU seconds per 1,000 batches and per million records, and the
verdict against the goals.

    python -m bench.verify_cost [--rounds 3] [--records 400000] [--max-offsets 20000] [--arms ...]

Writes ``bench/results/<date>-verify-cost.json``; ``make bench`` runs it as the cell ``verify``.
"""
from __future__ import annotations

import argparse
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import psutil
import yaml

from bench import method
from bench.common import load_avg, write_result
from bench.cpu import CpuSampler
from kafka_eos.connectors.operate.verify_follow import DEFAULT_RECOMPUTE_EVERY
from integration_tests.pipeline_runs import kill_group
from kafka_eos.connectors.spark_harness import python_env

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "config" / "pipelines" / "orders-json.yaml"
SCHEMA = REPO / "config" / "schemas" / "order.avsc"
CLI = "kafka_eos.connectors.cli"
ARMS = ("alone", "follow", "follow_recompute", "recompute_all")
FOLLOW_ARGS = {"alone": None, "follow": [], "follow_recompute": ["--recompute"],
               "recompute_all": ["--recompute", "--recompute-every", "1"]}
GOALS = {"follow": 0.95, "follow_recompute": 0.90}  # the least ratio to ``alone`` each goal allows
RECORDS = 240_000
MAX_OFFSETS = 2_450   # ~98 batches: the default sample (every 100th) re-runs one, its own rate
PARTITIONS = 4
INTERVAL_S = 1.0
CATCH_UP_MAX_S = 900.0
RUN_MAX_S = 900.0
BATCH_LINE = re.compile(r"batch (\d+): (\d+) in, .*?batch (\d+) ms")
FOLLOW_LINE = re.compile(r"batch(?:es)? (\d+)(?:-(\d+))?: (\d+ [^(]*?) \(([\d,]+) records"
                         r"(?:, ([\d.]+)-([\d.]+) s after their commit)?")
SESSION_READY = re.compile(r"the re-runs' Spark session is ready")
SESSION_MAX_S = 300.0
RERUN_DONE = re.compile(r"batch (\d+): re-run ")  # the re-run worker's line, once a sampled batch is judged
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


def sampled_batches(arm: str, committed: list[int]) -> list[int]:
    """The batches the arm's follower re-runs (ids divisible by --recompute-every, default 100)."""
    args = FOLLOW_ARGS[arm] or []
    if "--recompute" not in args:
        return []
    every = int(args[args.index("--recompute-every") + 1]) if "--recompute-every" in args else DEFAULT_RECOMPUTE_EVERY
    return [b for b in committed if b % every == 0]


def one_run(bootstrap: str, brokers: tuple[int, ...], source: str, arm: str, max_offsets: int,
            workdir: Path) -> dict:
    """One run of ``arm``: a fresh output topic and checkpoint; the pipeline, and its follower if any."""
    from integration_tests.kafka_tools import create_topic, unique
    from kafka_eos.txn.log.follow_state import latest_state
    from kafka_eos.txn.log.sink_log import SinkLogReader, location_for
    from kafka_eos.txn.protocol.states import BatchState
    directory = Path(tempfile.mkdtemp(prefix=f"{arm}-", dir=workdir))
    sink = create_topic(bootstrap, unique("vcost-out"), PARTITIONS)
    path = pipeline_file(directory, bootstrap, source, sink, max_offsets)
    log_location = location_for(str(directory / "checkpoint"))
    follower = None
    broker_before = broker_cpu(brokers)
    began = time.time()
    before_run: dict = {}
    if FOLLOW_ARGS[arm] is not None:
        follower = start(["verify", "--follow", str(path), "--interval", str(INTERVAL_S), *FOLLOW_ARGS[arm]],
                         directory / "follow.log")
        if "--recompute" in FOLLOW_ARGS[arm]:  # a follower runs for days: its session's start is paid once, before
            wait_for_line(follower, SESSION_READY, SESSION_MAX_S)
            before_run = {"session_ready_s": round(time.time() - began, 2),
                          "follower_cpu_before_run_s": sum(follower[2].samples[-1][1].values())
                          if follower[2].samples else 0.0}
            began = time.time()
            broker_before = broker_cpu(brokers)
    run = start(["run", str(path), "--once"], directory / "run.log")
    try:
        try:
            code = run[0].wait(RUN_MAX_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{arm}: the run did not end in {RUN_MAX_S:.0f} s:\n{run[1].tail()}") from None
        ended = time.time()
        run[1].thread.join(10)
        if code != 0:
            raise RuntimeError(f"{arm}: kafka-eos run --once exited {code}:\n{run[1].tail()}")
        out = {"arm": arm, "exit": code, "wall_s": round(ended - began, 2), "pipeline_cpu_s": cpu_total(run[2]),
               **before_run,
               **pipeline_figures(run[1].lines)}
        reader = SinkLogReader(log_location)
        committed = [b for b in reader.batch_ids() if (r := reader.get(b)) is not None
                     and r.state is BatchState.COMMITTED]
        out["committed_batches"] = len(committed)
        if follower is not None:
            deadline = ended + CATCH_UP_MAX_S
            while (state := latest_state(log_location)) is None or state.verified_through < committed[-1]:
                if follower[0].poll() is not None:
                    raise RuntimeError(f"{arm}: the follower exited {follower[0].returncode}:\n{follower[1].tail()}")
                if time.time() > deadline:
                    raise RuntimeError(f"{arm}: the follower verified through {state and state.verified_through} "
                                       f"of {committed[-1]} {CATCH_UP_MAX_S:.0f} s after the run:\n{follower[1].tail()}")
                time.sleep(0.2)
            caught_up = time.time()
            sampled = sampled_batches(arm, committed)
            while len({int(m[1]) for _, line in follower[1].lines if (m := RERUN_DONE.search(line))}) < len(sampled):
                if follower[0].poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{arm}: the follower did not re-run batches {sampled}:\n{follower[1].tail()}")
                time.sleep(0.2)
            reruns_done = time.time()
            follower[0].send_signal(signal.SIGTERM)
            stopped = follower[0].wait(120)
            follower[1].thread.join(10)
            out.update(catch_up_s=round(caught_up - ended, 2), reruns_done_s=round(reruns_done - ended, 2),
                       follower_exit=stopped,
                       follower_cpu_s=cpu_total(follower[2]),
                       follower_state={"verified_through": state.verified_through, "aged_out": state.aged_out,
                                       "totals": state.totals},
                       every_batch_verified=(state.aged_out == 0 and state.totals == {"verified": len(committed)}
                                             and state.verified_through == committed[-1]),
                       follower=follower_figures(follower[1].lines, out["batch_line_at"]))
            out["follower_steady"] = steady_cpu(follower[2], out["follower"]["rounds"])
            if stopped != 143:
                out["follower_log_tail"] = follower[1].tail()
        out["broker_cpu_s"] = round(broker_cpu(brokers) - broker_before, 2)
        out["dir"] = str(directory)
        return out
    finally:
        kill_group(run[0])
        run[2].stop()
        if follower is not None:
            kill_group(follower[0])
            follower[2].stop()


def measure(bootstrap: str, rounds: int, records: int, settle: Callable[[], dict], log: Callable[[str], None] = print,
            max_offsets: int = MAX_OFFSETS, arms: tuple[str, ...] = ARMS, broker_pids: tuple[int, ...] = ()) -> dict:
    """``rounds`` rounds of ``arms`` (the order rotating each round) over one input topic."""
    from integration_tests.kafka_tools import create_topic, unique
    from kafka_eos.connectors.demo_data import produce_orders
    source = create_topic(bootstrap, unique("vcost-orders"), PARTITIONS)
    started = time.monotonic()
    produce_orders(bootstrap, source, records)
    log(f"verify cost: {records:,} orders on {PARTITIONS} partitions in {time.monotonic() - started:.1f} s; "
        f"{rounds} rounds of {', '.join(arms)}, batches of {max_offsets:,}")
    runs: dict[str, list[dict]] = {a: [] for a in arms}
    loads = {"start": load_avg()}
    with tempfile.TemporaryDirectory(prefix="verify-cost-") as workdir:
        settle()
        warm = one_run(bootstrap, broker_pids, source, "alone", max_offsets, Path(workdir))
        log(f"verify cost warm-up (alone, not counted): {warm['records_per_s']:,} rec/s, wall {warm['wall_s']} s")
        for r in range(rounds):
            for arm in arms[r % len(arms):] + arms[:r % len(arms)]:
                settled, before = settle(), load_avg()
                result = one_run(bootstrap, broker_pids, source, arm, max_offsets, Path(workdir))
                result.update(round=r, settle=settled, load_avg_1m={"before": before, "after": load_avg()})
                runs[arm].append(result)
                log(f"verify cost round {r + 1}/{rounds} {arm}: {result['records_per_s']:,} rec/s "
                    f"({result['batches']} batches, wall {result['wall_s']} s, pipeline CPU "
                    f"{result['pipeline_cpu_s']['total']} s"
                    + (f"; follower CPU {result['follower_cpu_s']['total']} s, caught up {result['catch_up_s']} s "
                       f"after the run, delay max {result['follower']['delay_max_s']} s, every batch verified "
                       f"{result['every_batch_verified']}" if "follower" in result else "")
                    + f"; load {before} -> {result['load_avg_1m']['after']})")
    loads["end"] = load_avg()
    return {"input": {"records": records, "record_bytes": "~100 (JSON orders)", "partitions": PARTITIONS,
                      "max_offsets_per_trigger": max_offsets, "trigger_s": 0, "interval_s": INTERVAL_S,
                      "pipeline": "config/pipelines/orders-json.yaml, on_decode_error skip"},
            "arms": list(arms), "rounds": rounds, "load_avg_1m": loads, **summarize(runs), "runs": runs}


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--records", type=int, default=RECORDS)
    p.add_argument("--max-offsets", type=int, default=MAX_OFFSETS)
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {','.join(ARMS)}")
    p.add_argument("--settle-busy-pct", type=float, default=25.0)
    p.add_argument("--settle-max-s", type=float, default=30.0)
    a = p.parse_args()
    arms = tuple(x for x in ARMS if x in a.arms.split(","))
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} load {load_avg()}] {message}", flush=True)
    began = time.monotonic()
    with LocalKafkaCluster() as cluster:
        brokers = tuple(n.process.pid for n in cluster.nodes if n.process)
        result = measure(cluster.bootstrap, a.rounds, a.records, lambda: method.settle(a.settle_busy_pct, a.settle_max_s),
                         log, a.max_offsets, arms, brokers)
    result["took_s"] = round(time.monotonic() - began)
    path = write_result("verify-cost", result)
    print("\n".join(lines(result)))
    print(f"took {result['took_s']} s; load average (1 min) {result['load_avg_1m']}; wrote {path}")


if __name__ == "__main__":
    main()
