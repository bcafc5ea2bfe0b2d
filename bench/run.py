"""The benchmark suite (issue 6), in one run on one local broker; ``make bench`` runs it.

For each record size (1M x 100 B and 1M x 1 KB by default), on the same input topic:
kafka-eos exactly-once, kafka-eos at-least-once, Spark's built-in kafka source + sink
(at-least-once), and the plain confluent-kafka exactly-once loop (``bench.throughput``,
``bench.ceiling``); peak memory of the Spark runs (``bench.memory``). Then end-to-end latency
at 10k records/s with trigger 5 s and 1 s (``bench.latency``), the 2PC commit latency for 1, 8
and 64 output partitions (``bench.commit``) and, on the first size, where the time goes:
each source alone and the mixed source/sink pairs (``bench.throughput.breakdown``).

Writes ``bench/results/<date>.json`` and ``<date>.png`` (``--quick``: ``<date>-quick.*``) and
prints the ratios, machine and versions. Ratios are kafka-eos exactly-once / the other system
(higher is better).

    python -m bench.run [--records 1000000] [--sizes 100,1024] [--quick]
"""
from __future__ import annotations

import argparse
import json
import time

from bench import commit, latency, throughput
from bench.common import RESULTS, load_avg, machine, write_result
from bench.plot import plot
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster


def options() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--sizes", default="100,1024", help="record sizes in bytes, comma-separated")
    p.add_argument("--rate", type=int, default=10_000, help="records/s of the latency runs")
    p.add_argument("--latency-seconds", type=int, default=60)
    p.add_argument("--triggers", default="5,1", help="trigger seconds of the latency runs")
    p.add_argument("--commit-records", type=int, default=200_000)
    p.add_argument("--no-breakdown", action="store_true", help="skip the source/sink breakdown runs")
    p.add_argument("--quick", action="store_true", help="small smoke run: 100k records, 100 B, 10 s latency")
    a = p.parse_args()
    if a.quick:
        a.records, a.sizes, a.latency_seconds, a.commit_records = 100_000, "100", 10, 40_000
    return a


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load_avg()}] {message}", flush=True)


def measure(a: argparse.Namespace) -> dict:
    sizes = [int(s) for s in a.sizes.split(",")]
    loads = {"start": load_avg()}
    out: dict = {"throughput": {}, "latency_runs": []}
    with LocalKafkaCluster() as cluster:
        bootstrap = cluster.bootstrap
        for size in sizes:
            inp = throughput.prepare_input(bootstrap, a.records, size)
            log(f"{a.records:,} x {size} B produced in {inp.produce_s} s; throughput runs")
            loads[f"throughput_{size}"] = load_avg()
            out["throughput"][str(size)] = runs = throughput.suite(inp)
            log(f"{size} B: " + ", ".join(f"{k} {runs[k]['records_per_s']:,}/s" for k in
                                          ("eos", "eos_alo", "spark_native", "python_ceiling")))
            if size == sizes[0] and not a.no_breakdown:
                loads["breakdown"] = load_avg()
                out["breakdown"] = throughput.breakdown(inp)
                out["breakdown"]["record_bytes"] = size
                log("breakdown: " + ", ".join(f"{k} {v['records_per_s']:,}/s" for k, v in out["breakdown"].items()
                                              if isinstance(v, dict)))
        for trigger in (float(t) for t in a.triggers.split(",")):
            loads[f"latency_trigger_{trigger:g}s"] = load_avg()
            run = latency.measure(bootstrap, trigger, a.rate, a.latency_seconds)
            out["latency_runs"].append(run)
            log(f"latency, trigger {trigger:g} s: p50 {run['p50']} ms, p99 {run['p99']} ms")
        loads["commit"] = load_avg()
        out["commit_ms"] = commit.suite(bootstrap, records=a.commit_records)
        log("commit: " + ", ".join(f"{p} partitions median {c['median_ms']} ms" for p, c in out["commit_ms"].items()))
    loads["end"] = load_avg()
    out["load_avg_1m"] = loads
    return out


def assemble(a: argparse.Namespace, measured: dict) -> dict:
    """The result document: headline figures first, every run's details after."""
    first = measured["throughput"][a.sizes.split(",")[0]]
    main_latency = measured["latency_runs"][0]
    return {
        "suite": "bench.run (issue 6)", "quick": a.quick, "master": "local[2]",
        "records": a.records, "record_sizes": [int(s) for s in a.sizes.split(",")], "trigger_s": 5,
        "ratios": {**first["ratios"], "record_bytes": first["input"]["record_bytes"],
                   "by_size": {size: runs["ratios"] for size, runs in measured["throughput"].items()}},
        "records_per_s": {size: {k: runs[k]["records_per_s"] for k in ("eos", "eos_alo", "spark_native",
                                                                        "python_ceiling")}
                          for size, runs in measured["throughput"].items()},
        "latency_ms": {k: main_latency[k] for k in ("p50", "p90", "p99", "max", "trigger_s", "rate_per_s")}
        | {"by_trigger": {f"{r['trigger_s']:g}s": {k: r[k] for k in ("p50", "p90", "p99", "max")}
                          for r in measured["latency_runs"]}},
        "commit_ms": measured["commit_ms"],
        "peak_memory_mb": {size: {k: runs[k]["memory"] for k in ("eos", "spark_native")}
                           for size, runs in measured["throughput"].items()},
        **measured,
    }


def report(result: dict, json_path, png_path) -> None:
    r = result["ratios"]
    print(f"\n== kafka-eos benchmark {result['date']} ==")
    for size, runs in result["records_per_s"].items():
        print(f"{int(size):>5} B records/s: " + ", ".join(f"{k} {v:,}" for k, v in runs.items()))
    for size, ratios in r["by_size"].items():
        print(f"{int(size):>5} B ratios: eos/spark_native {ratios['eos_vs_spark_native']}, eos/eos_alo "
              f"{ratios['eos_vs_eos_alo']}, eos/python_ceiling {ratios['eos_vs_python_ceiling']}")
    for run in result["latency_runs"]:
        print(f"latency at {run['rate_per_s']:,} rec/s, trigger {run['trigger_s']:g} s: p50 {run['p50']} ms, "
              f"p99 {run['p99']} ms ({run['records']:,} records, {run['missing']} missing, "
              f"{run['duplicates']} duplicates)")
    for p, c in result["commit_ms"].items():
        print(f"2PC commit, {p:>2} output partitions: median {c['median_ms']} ms, p90 {c['p90_ms']} ms, "
              f"max {c['max_ms']} ms ({c['batches']} batches)")
    for size, mem in result["peak_memory_mb"].items():
        for k, m in mem.items():
            print(f"peak memory {k} ({size} B): driver {m['driver_mb']} MB (JVM {m['driver_jvm_mb']}, Python "
                  f"{m['driver_python_mb']}, runners {m['driver_runners_mb']}), workers {m['workers_mb']} MB, "
                  f"tree {m['total_mb']} MB RSS / {m['total_pss_mb']} MB PSS")
    print("machine: " + ", ".join(f"{k} {v}" for k, v in result["machine"].items()))
    print(f"load average (1 min): {result['load_avg_1m']}")
    print(f"written {json_path} and {png_path}")


def main() -> None:
    a = options()
    log(f"bench.run: {a.records:,} records, sizes {a.sizes}; machine {machine()}")
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
