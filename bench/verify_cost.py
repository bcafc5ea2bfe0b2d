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
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable


from bench import method
from bench.common import load_avg, write_result
from kafka_eos.connectors.operate.verify_follow import DEFAULT_RECOMPUTE_EVERY
from integration_tests.pipeline_runs import kill_group
from bench.verify_cost_parts import (broker_cpu, cpu_total, follower_figures, lines, pipeline_figures, pipeline_file,
                                     start, steady_cpu, summarize, wait_for_line)

ARMS = ("alone", "follow", "follow_recompute", "recompute_all")
FOLLOW_ARGS = {"alone": None, "follow": [], "follow_recompute": ["--recompute"],
               "recompute_all": ["--recompute", "--recompute-every", "1"]}
RECORDS = 240_000
MAX_OFFSETS = 2_450   # ~98 batches: the default sample (every 100th) re-runs one, its own rate
PARTITIONS = 4
INTERVAL_S = 1.0
CATCH_UP_MAX_S = 900.0
RUN_MAX_S = 900.0
SESSION_READY = re.compile(r"the re-runs' Spark session is ready")
SESSION_MAX_S = 300.0
RERUN_DONE = re.compile(r"batch (\d+): re-run ")  # the re-run worker's line, once a sampled batch is judged


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
