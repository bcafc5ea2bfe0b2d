"""The benchmark suite (issues 6 and 14), in one run on one local broker; ``make bench`` runs it.

For each record size (1M x 100 B and 1M x 1 KB by default, ``maxOffsetsPerTrigger`` 250k: 4
batches, the first not timed), on the same input topic, ``--rounds`` (3) interleaved rounds of
kafka-eos exactly-once, kafka-eos at-least-once, Spark's built-in kafka source + sink with
defaults and tuned, and the plain confluent-kafka exactly-once loop (``bench.throughput``,
``bench.method``: settling, median/min/max, noisy, per-round ratios); peak memory of the Spark
runs of the first round (``bench.memory``); for every size, the stage profile of one
exactly-once and one at-least-once batch (``bench.stage_profile``). Then the cells of issue 27
(``bench.cells``): 16 and 64 partitions (100 B, eos, eos_alo, spark_tuned) and ``small_batch``
(8 partitions, batches of 4,000, trigger 1 s, per-batch time); ``bench.scaling``: kafka-eos
exactly-once on a local Spark standalone cluster, 1 and 2 Workers x 4 and 16 partitions
(``--scaling-records``, 1M); end-to-end latency at 10k records/s with trigger 1 s and 0.5 s,
kafka-eos and Spark's kafka, interleaved rounds (``bench.latency``); the 2PC commit latency for
1, 8 and 64 output partitions (``bench.commit``); the write evidence's cost to a sink task
(``bench.evidence_cost``) and to a whole pipeline (``bench.evidence_pipeline``); what ``verify --follow``
beside a pipeline costs it, with and without re-runs (``bench.verify_cost``); a keyed windowed count
on RocksDB against HDFS state (``bench.state_backend``); ``large_state``: a windowed count and a
dedup at 1M keys, hdfs / rocksdb / Spark's own kafka source and sink (``bench.large_state``). ``--cells`` /
``--skip-cells`` pick the parts (``4p,16p,64p,small_batch,profile,scaling,latency,commit,evidence,verify,state,large_state``),
so a suite can be rerun in part.
Last, the goals of issue 27 (``bench.goals``) from what was measured.

Writes ``bench/results/<date>.json`` and ``<date>.png`` (``--quick``: ``<date>-quick.*``; a
partial run adds its parts: ``<date>-small_batch.*``) and prints medians with their ranges, the
ratios (the median of the per-round ratios), the profiles, the goals, machine and versions.

    python -m bench.run [--rounds 3] [--records 1000000] [--max-offsets 250000] [--sizes 100,1024]
                        [--cells 4p,16p,...] [--skip-cells 64p] [--quick]
"""
from __future__ import annotations

import argparse
import json
import time

from bench import (cells, commit, evidence_cost, evidence_pipeline, goals, large_state, latency, method,
                   pipeline_groups, scaling, stage_profile, state_backend, throughput, verify_cost)
from bench.common import RESULTS, load_avg, machine, write_result
from bench.plot import plot
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster


def options(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, help="interleaved rounds of every configuration (3; --quick: 2)")
    p.add_argument("--records", type=int, default=1_000_000,
                   help="records per input topic, also of the 16p and 64p cells (the goals are stated at 1M)")
    p.add_argument("--max-offsets", type=int, default=0, help="maxOffsetsPerTrigger (default: records / 4)")
    p.add_argument("--settle-busy-pct", type=float, default=25.0,
                   help="before each run wait until CPU busy (3 s window) is below this")
    p.add_argument("--settle-max-s", type=float, default=120.0, help="longest wait for the machine to settle")
    p.add_argument("--settle-load", type=float, default=0.0,
                   help="also wait for the 1-minute load average below this (0: off)")
    p.add_argument("--sizes", default="100,1024", help="record sizes in bytes, comma-separated")
    p.add_argument("--rate", type=int, default=2_000, help="records/s of the latency runs (issue 45.3)")
    p.add_argument("--latency-seconds", type=int, default=300)
    p.add_argument("--triggers", default="1", help="trigger seconds of the latency runs")
    p.add_argument("--latency-rounds", type=int, default=2, help="interleaved rounds of the latency runs")
    p.add_argument("--commit-records", type=int, default=200_000)
    p.add_argument("--large-state-keys", type=int, default=1_000_000, help="distinct keys of the large_state cell")
    p.add_argument("--large-state-heap", default="2g", help="spark.driver.memory of the large_state runs")
    p.add_argument("--no-profile", action="store_true", help="skip the stage profile runs (= --skip-cells profile)")
    p.add_argument("--cells", default="", help=f"parts to run, comma-separated, of {','.join(cells.ALL)} "
                   f"(default: {','.join(cells.DEFAULT)})")
    p.add_argument("--skip-cells", default="", help="parts not to run, e.g. 64p")
    p.add_argument("--small-batches", type=int, default=cells.SMALL_BATCH_BATCHES,
                   help=f"batches of {cells.SMALL_BATCH_OFFSETS:,} records in the small_batch cell (the first not timed)")
    p.add_argument("--scaling-records", type=int, default=1_000_000, help="records of the scaling runs (first size)")
    p.add_argument("--no-scaling", action="store_true", help="skip the standalone-cluster scaling runs (= --skip-cells scaling)")
    p.add_argument("--scaling-rounds", type=int, default=2, help="interleaved rounds of the scaling cells")
    p.add_argument("--quick", action="store_true",
                   help="small smoke run: 2 rounds of 200k x 100 B in 50k batches (16p, 64p too), small_batch of "
                        "9 batches, settle <= 15 s, 10 s latency, scaling on 100k")
    a = p.parse_args(argv)
    if a.quick:
        a.records, a.sizes, a.latency_seconds, a.commit_records = min(a.records, 200_000), "100", 10, 40_000
        a.scaling_records, a.latency_rounds, a.scaling_rounds = 100_000, 1, 1
        a.settle_max_s = min(a.settle_max_s, 15.0)
        a.small_batches = min(a.small_batches, 9)
    try:
        a.cells = cells.parse_cells(a.cells, a.skip_cells, a.no_profile, a.no_scaling)
    except ValueError as exc:
        p.error(str(exc))
    a.rounds = a.rounds or (2 if a.quick else 3)
    a.max_offsets = a.max_offsets or a.records // 4
    return a


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load_avg()}] {message}", flush=True)


def measure(a: argparse.Namespace) -> dict:
    sizes = [int(s) for s in a.sizes.split(",")]
    want = set(a.cells)
    loads = {"start": load_avg()}
    out: dict = {"throughput": {}, "latency_runs": []}

    def settle() -> dict:
        return method.settle(a.settle_busy_pct, a.settle_max_s, a.settle_load)

    with LocalKafkaCluster() as cluster:
        bootstrap = cluster.bootstrap
        brokers = tuple(n.process.pid for n in cluster.nodes if n.process)
        for size in sizes if want & {"4p", "profile"} else []:
            inp = throughput.prepare_input(bootstrap, a.records, size, a.max_offsets, broker_pids=brokers)
            log(f"{a.records:,} x {size} B produced in {inp.produce_s} s; {a.rounds} rounds")
            if "4p" in want:
                loads[f"throughput_{size}"] = load_avg()
                out["throughput"][str(size)] = runs = throughput.suite(inp, a.rounds, settle, log)
                log(f"{size} B: " + ", ".join(f"{k} {v['median']:,}/s [{v['min']:,}-{v['max']:,}]"
                                              f"{' NOISY' if v['noisy'] else ''}"
                                              for k, v in runs["records_per_s"].items()))
            if "profile" in want:
                loads[f"profile_{size}"] = settle()["load_avg_1m"]
                profile = out.setdefault("profile", {})[str(size)] = stage_profile.suite(inp)
                log(f"profile {size} B (s per M records):\n" + stage_profile.table(profile))
        if want & {"16p", "64p", "small_batch"}:
            loads["cells"] = load_avg()
            out["cells"] = cells.measure(bootstrap, a.cells, a.records, a.max_offsets, a.rounds, a.small_batches,
                                         settle, log, brokers)
        if "scaling" in want:
            loads["scaling"] = load_avg()
            out["scaling"] = scaling.measure(bootstrap, a.scaling_records, sizes[0], a.scaling_rounds, settle, log)
        if "latency" in want:
            loads["latency"] = load_avg()
            lat = latency.suite(bootstrap, [float(t) for t in a.triggers.split(",")], a.rate, a.latency_seconds,
                                a.latency_rounds, settle, log)
            out["latency_runs"], out["latency_summary"] = lat["runs"], lat["summary"]
            if "profile" in want:
                settle()
                out["latency_profile"] = latency.small_batch_profile(bootstrap, 1.0, a.rate, a.latency_seconds)
                log(f"small-batch profile (trigger 1 s): {out['latency_profile']}")
        if "commit" in want:
            loads["commit"] = load_avg()
            out["commit_ms"] = commit.suite(bootstrap, records=a.commit_records)
            log("commit: " + ", ".join(f"{p} partitions median {c['median_ms']} ms"
                                       for p, c in out["commit_ms"].items()))
        if "evidence" in want:  # issue 46: what the write evidence costs a sink task and a pipeline
            loads["evidence"] = settle()["load_avg_1m"]
            out["evidence_cost"] = evidence_cost.measure(bootstrap, max(a.rounds, 5), [250_000, 2_000])
            log("\n".join(evidence_cost.lines(out["evidence_cost"])))
            out["evidence_pipeline"] = evidence_pipeline.measure(bootstrap, max(a.rounds, 5), a.records, settle, log)
            log("\n".join(evidence_pipeline.lines(out["evidence_pipeline"])))
        if "verify" in want:  # issue 59: what verify --follow (and its re-runs) costs a pipeline beside it
            loads["verify"] = settle()["load_avg_1m"]
            out["verify_cost"] = verify_cost.measure(bootstrap, a.rounds, verify_cost.RECORDS, settle, log,
                                                     broker_pids=brokers)
            log("\n".join(verify_cost.lines(out["verify_cost"])))
        if "state" in want:  # issue 65: the state backend of a stateful pipeline, RocksDB against HDFS
            loads["state"] = settle()["load_avg_1m"]
            out["state_backend"] = state_backend.measure(bootstrap, a.rounds, settle, log)
            log("\n".join(state_backend.lines(out["state_backend"])))
        if "large_state" in want:  # issue 65: 1M keys, windowed count and dedup, hdfs / rocksdb / Spark's kafka
            loads["large_state"] = settle()["load_avg_1m"]
            out["large_state"] = large_state.measure(bootstrap, a.large_state_keys, list(large_state.QUERIES),
                                                     a.rounds, a.large_state_heap, settle, log)
            log("\n".join(large_state.lines(out["large_state"])))
        if "groups" in want:  # issue 67: N pipelines as one group in one application against N separate drivers
            loads["groups"] = settle()["load_avg_1m"]
            out["pipeline_groups"] = pipeline_groups.measure(
                bootstrap, pipeline_groups.options(["--quick"] if a.quick else []), log)
            log("\n".join(pipeline_groups.line(run) for run in out["pipeline_groups"]["runs"]))
    loads["end"] = load_avg()
    out["load_avg_1m"] = loads
    return out


def assemble(a: argparse.Namespace, measured: dict) -> dict:
    """The result document: headline figures first, every run's details (every sample) after."""
    ratios = {size: runs["ratios"] for size, runs in measured["throughput"].items()}
    memory = {size: runs["memory"] for size, runs in measured["throughput"].items()}
    return {
        "suite": "bench.run (issues 6, 14, 27)", "quick": a.quick, "master": "local[2]", "parts": a.cells,
        "records": a.records, "max_offsets_per_trigger": a.max_offsets, "rounds": a.rounds,
        "record_sizes": [int(s) for s in a.sizes.split(",")], "trigger_s": 5,
        "method": {"order": list(throughput.CONFIGS), "rate": "steady state: batches after the first, rows / "
                   "sum of their triggerExecution", "noisy_spread": method.NOISY_SPREAD,
                   "settle": {"cpu_busy_pct_below": a.settle_busy_pct, "max_wait_s": a.settle_max_s,
                              "load_avg_1m_below": a.settle_load or None},
                   "cells": {"partition_cells": {"configs": list(cells.CELL_CONFIGS), "record_bytes": cells.CELL_SIZE,
                                                 "records": a.records, "max_offsets_per_trigger": a.max_offsets},
                             "small_batch": {"partitions": cells.SMALL_BATCH_PARTITIONS,
                                             "max_offsets_per_trigger": cells.SMALL_BATCH_OFFSETS,
                                             "trigger_s": cells.SMALL_BATCH_TRIGGER_S, "batches": a.small_batches,
                                             "figure": "median triggerExecution of the batches after the first"}}},
        "records_per_s": {size: runs["records_per_s"] for size, runs in measured["throughput"].items()},
        "ratios": ratios,
        "latency_ms": {"rate_per_s": a.rate, "rounds": a.latency_rounds,
                       "by_format_and_trigger": measured.get("latency_summary", {})},
        "commit_ms": measured.get("commit_ms", {}),
        "peak_memory_mb": memory,
        "cpu_s_per_m": {size: runs["cpu_s_per_m"] for size, runs in measured["throughput"].items()},
        "goals_27": goals.goals_27(ratios, measured.get("cells", {}), memory, measured["latency_runs"]),
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
    for size, profile in stage_profile.by_size(result.get("profile")).items():
        print(f"profile {size} B, s per million records:\n" + stage_profile.table(profile))
    for line in [*cells.lines(result.get("cells", {})), *scaling.lines(result.get("scaling", {}))]:
        print(line)
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
    for line in goals.lines(result["goals_27"]):
        print(line)
    print("machine: " + ", ".join(f"{k} {v}" for k, v in result["machine"].items()))
    print(f"load average (1 min): {result['load_avg_1m']}")
    print(f"written {json_path} and {png_path}")


def main() -> None:
    a = options()
    log(f"bench.run: {a.rounds} rounds of {a.records:,} records in batches of {a.max_offsets:,}, sizes {a.sizes}, "
        f"parts {','.join(a.cells)}; machine {machine()}")
    result = assemble(a, measure(a))
    name = cells.result_name(a.quick, a.cells)
    samples = [run.pop("_samples_ms") for run in result["latency_runs"]]
    json_path = write_result(name, result)
    document = json.loads(json_path.read_text())
    for run, kept in zip(document["latency_runs"], samples, strict=True):
        run["_samples_ms"] = kept
    png_path = plot(document, json_path.with_suffix(".png"))
    report(json.loads(json_path.read_text()), json_path.relative_to(RESULTS.parent.parent),
           png_path.relative_to(RESULTS.parent.parent))


if __name__ == "__main__":
    main()
