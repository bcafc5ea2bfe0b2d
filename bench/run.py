"""The benchmark suite (issues 6 and 14), in one run on one local broker; ``make bench`` runs it.

For each record size (1M x 100 B and 1M x 1 KB by default, ``maxOffsetsPerTrigger`` 250k: 4
batches, the first not timed), on the same input topic, ``--rounds`` (3) interleaved rounds of
kafka-eos exactly-once, kafka-eos at-least-once, Spark's built-in kafka source + sink with
defaults and tuned, and the plain confluent-kafka exactly-once loop (``bench.throughput``,
``bench.method``: settling, median/min/max, noisy, per-round ratios); peak memory of the Spark
runs of the first round (``bench.memory``). Then, on the first size, the stage profile of one
exactly-once and one at-least-once batch (``bench.stage_profile``), end-to-end latency at 10k
records/s with trigger 1 s and 0.5 s, kafka-eos and Spark's kafka, interleaved rounds (``bench.latency``) and the 2PC commit latency for 1, 8 and
64 output partitions (``bench.commit``). After the sizes, ``bench.scaling``: kafka-eos exactly-once on a
local Spark standalone cluster, 1 and 2 Workers x 4 and 16 partitions (``--scaling-records``, 1M; ``--no-scaling``).

Writes ``bench/results/<date>.json`` and ``<date>.png`` (``--quick``: ``<date>-quick.*``) and
prints medians with their ranges, the ratios (kafka-eos exactly-once / the other system, the
median of the per-round ratios; higher is better), the profile, machine and versions.

    python -m bench.run [--rounds 3] [--records 1000000] [--max-offsets 250000] [--sizes 100,1024] [--quick]
"""
from __future__ import annotations

import argparse
import json
import time

from bench import commit, latency, method, scaling, stage_profile, throughput
from bench.common import RESULTS, load_avg, machine, write_result
from bench.plot import plot
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster


def options(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, help="interleaved rounds of every configuration (3; --quick: 2)")
    p.add_argument("--records", type=int, default=1_000_000, help="records per input topic (the goals of issue 14 are stated at 1M)")
    p.add_argument("--max-offsets", type=int, default=0, help="maxOffsetsPerTrigger (default: records / 4)")
    p.add_argument("--settle-busy-pct", type=float, default=25.0,
                   help="before each run wait until CPU busy (3 s window) is below this")
    p.add_argument("--settle-max-s", type=float, default=120.0, help="longest wait for the machine to settle")
    p.add_argument("--settle-load", type=float, default=0.0,
                   help="also wait for the 1-minute load average below this (0: off)")
    p.add_argument("--sizes", default="100,1024", help="record sizes in bytes, comma-separated")
    p.add_argument("--rate", type=int, default=10_000, help="records/s of the latency runs")
    p.add_argument("--latency-seconds", type=int, default=30)
    p.add_argument("--triggers", default="1,0.5", help="trigger seconds of the latency runs")
    p.add_argument("--latency-rounds", type=int, default=2, help="interleaved rounds of the latency runs")
    p.add_argument("--commit-records", type=int, default=200_000)
    p.add_argument("--no-profile", action="store_true", help="skip the stage profile runs")
    p.add_argument("--scaling-records", type=int, default=1_000_000, help="records of the scaling runs (first size)")
    p.add_argument("--no-scaling", action="store_true", help="skip the standalone-cluster scaling runs")
    p.add_argument("--scaling-rounds", type=int, default=2, help="interleaved rounds of the scaling cells")
    p.add_argument("--quick", action="store_true",
                   help="small smoke run: 2 rounds of 200k x 100 B in 50k batches, settle <= 15 s, 10 s latency, "
                        "scaling on 100k")
    a = p.parse_args(argv)
    if a.quick:
        a.records, a.sizes, a.latency_seconds, a.commit_records = 200_000, "100", 10, 40_000
        a.scaling_records, a.latency_rounds, a.scaling_rounds = 100_000, 1, 1
        a.settle_max_s = min(a.settle_max_s, 15.0)
    a.rounds = a.rounds or (2 if a.quick else 3)
    a.max_offsets = a.max_offsets or a.records // 4
    return a


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load_avg()}] {message}", flush=True)


def measure(a: argparse.Namespace) -> dict:
    sizes = [int(s) for s in a.sizes.split(",")]
    loads = {"start": load_avg()}
    out: dict = {"throughput": {}, "latency_runs": []}

    def settle() -> dict:
        return method.settle(a.settle_busy_pct, a.settle_max_s, a.settle_load)

    with LocalKafkaCluster() as cluster:
        bootstrap = cluster.bootstrap
        brokers = tuple(n.process.pid for n in cluster.nodes if n.process)
        for size in sizes:
            inp = throughput.prepare_input(bootstrap, a.records, size, a.max_offsets, broker_pids=brokers)
            log(f"{a.records:,} x {size} B produced in {inp.produce_s} s; {a.rounds} rounds")
            loads[f"throughput_{size}"] = load_avg()
            out["throughput"][str(size)] = runs = throughput.suite(inp, a.rounds, settle, log)
            log(f"{size} B: " + ", ".join(f"{k} {v['median']:,}/s [{v['min']:,}-{v['max']:,}]"
                                          f"{' NOISY' if v['noisy'] else ''}"
                                          for k, v in runs["records_per_s"].items()))
            if size == sizes[0] and not a.no_profile:
                loads["profile"] = settle()["load_avg_1m"]
                out["profile"] = stage_profile.suite(inp)
                log("profile (s per M records):\n" + stage_profile.table(out["profile"]))
        if not a.no_scaling:
            loads["scaling"] = load_avg()
            out["scaling"] = scaling.measure(bootstrap, a.scaling_records, sizes[0], a.scaling_rounds, settle, log)
        loads["latency"] = load_avg()
        lat = latency.suite(bootstrap, [float(t) for t in a.triggers.split(",")], a.rate, a.latency_seconds,
                            a.latency_rounds, settle, log)
        out["latency_runs"], out["latency_summary"] = lat["runs"], lat["summary"]
        if not a.no_profile:
            settle()
            out["latency_profile"] = latency.small_batch_profile(bootstrap, 1.0, a.rate, a.latency_seconds)
            log(f"small-batch profile (trigger 1 s): {out['latency_profile']}")
        loads["commit"] = load_avg()
        out["commit_ms"] = commit.suite(bootstrap, records=a.commit_records)
        log("commit: " + ", ".join(f"{p} partitions median {c['median_ms']} ms" for p, c in out["commit_ms"].items()))
    loads["end"] = load_avg()
    out["load_avg_1m"] = loads
    return out


def assemble(a: argparse.Namespace, measured: dict) -> dict:
    """The result document: headline figures first, every run's details (every sample) after."""
    return {
        "suite": "bench.run (issues 6, 14)", "quick": a.quick, "master": "local[2]",
        "records": a.records, "max_offsets_per_trigger": a.max_offsets, "rounds": a.rounds,
        "record_sizes": [int(s) for s in a.sizes.split(",")], "trigger_s": 5,
        "method": {"order": list(throughput.CONFIGS), "rate": "steady state: batches after the first, rows / "
                   "sum of their triggerExecution", "noisy_spread": method.NOISY_SPREAD,
                   "settle": {"cpu_busy_pct_below": a.settle_busy_pct, "max_wait_s": a.settle_max_s,
                              "load_avg_1m_below": a.settle_load or None}},
        "records_per_s": {size: runs["records_per_s"] for size, runs in measured["throughput"].items()},
        "ratios": {size: runs["ratios"] for size, runs in measured["throughput"].items()},
        "latency_ms": {"rate_per_s": a.rate, "rounds": a.latency_rounds,
                       "by_format_and_trigger": measured["latency_summary"]},
        "commit_ms": measured["commit_ms"],
        "peak_memory_mb": {size: runs["memory"] for size, runs in measured["throughput"].items()},
        "cpu_s_per_m": {size: runs["cpu_s_per_m"] for size, runs in measured["throughput"].items()},
        **measured,
    }


def report(result: dict, json_path, png_path) -> None:
    print(f"\n== kafka-eos benchmark {result['date']} ({result['rounds']} rounds) ==")
    for size, runs in result["records_per_s"].items():
        print(f"{int(size):>5} B records/s, median [min-max]: " + ", ".join(
            f"{k} {v['median']:,} [{v['min']:,}-{v['max']:,}]{' NOISY' if v['noisy'] else ''}" for k, v in runs.items()))
    for size, ratios in result["ratios"].items():
        print(f"{int(size):>5} B ratios (median of per-round [min-max]): " + ", ".join(
            f"{k} {v['median']} [{v['min']}-{v['max']}]" for k, v in ratios.items()))
    if "profile" in result:
        print("profile, s per million records:\n" + stage_profile.table(result["profile"]))
    for scaling_line in scaling.lines(result.get("scaling", {})):
        print(scaling_line)
    for size, cpu in result["cpu_s_per_m"].items():
        for name, figures in cpu.items():
            if figures:
                print(f"CPU s per million records, {name} ({size} B): " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    for key, q in result["latency_ms"]["by_format_and_trigger"].items():
        print(f"latency {key}: p50 median {q['p50']['median']} ms [{q['p50']['min']}-{q['p50']['max']}], "
              f"p99 median {q['p99']['median']} ms [{q['p99']['min']}-{q['p99']['max']}]")
    for run in result["latency_runs"]:
        print(f"latency run {run['format']} round {run['round'] + 1} at {run['rate_per_s']:,} rec/s, "
              f"trigger {run['trigger_s']:g} s: p50 {run['p50']} ms, "
              f"p99 {run['p99']} ms ({run['records']:,} records, {run['missing']} missing, "
              f"{run['duplicates']} duplicates)")
    for p, c in result["commit_ms"].items():
        print(f"2PC commit, {p:>2} output partitions: median {c['median_ms']} ms, p90 {c['p90_ms']} ms, "
              f"max {c['max_ms']} ms ({c['batches']} batches)")
    for size, mem in result["peak_memory_mb"].items():
        for k, m in mem.items():
            if not m:
                continue
            print(f"peak memory {k} ({size} B): driver {m['driver_mb']} MB (JVM {m['driver_jvm_mb']}, Python "
                  f"{m['driver_python_mb']}, runners {m['driver_runners_mb']}), workers {m['workers_mb']} MB, "
                  f"tree {m['total_mb']} MB RSS / {m['total_pss_mb']} MB PSS")
    print("machine: " + ", ".join(f"{k} {v}" for k, v in result["machine"].items()))
    print(f"load average (1 min): {result['load_avg_1m']}")
    print(f"written {json_path} and {png_path}")


def main() -> None:
    a = options()
    log(f"bench.run: {a.rounds} rounds of {a.records:,} records in batches of {a.max_offsets:,}, sizes {a.sizes}; "
        f"machine {machine()}")
    result = assemble(a, measure(a))
    name = "quick" if a.quick else None
    samples = [run.pop("_samples_ms") for run in result["latency_runs"]]
    json_path = write_result(name, result)
    document = json.loads(json_path.read_text())
    for run, kept in zip(document["latency_runs"], samples):
        run["_samples_ms"] = kept
    png_path = plot(document, json_path.with_suffix(".png"))
    report(json.loads(json_path.read_text()), json_path.relative_to(RESULTS.parent.parent),
           png_path.relative_to(RESULTS.parent.parent))


if __name__ == "__main__":
    main()
