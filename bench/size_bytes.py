"""What the value bytes cost the Spark JVM (issue 68, step 1): the same query with and without them.

Per record size one input topic of about ``--run-mb`` MB (4 partitions, 4 batches, the first not
timed; ``bench.size_profile``'s shape) and interleaved rounds of:
  eos          kafka-eos exactly-once, ``key``, ``value`` through the JVM (``bench.throughput``);
  eos_novalue  the same query on ``kafka-eos-novalue`` (``size_bytes_hooks``): each source batch's
               ``value`` column is nulls, so no value byte crosses into or out of the JVM (the sink
               writes null values: its produce and the broker move no value bytes either);
  eos_refs     the same query with ``emit=valueRefs``: each value a reference, read back by the sink
               task (``connectors/sink/value_input.py``);
  eos_ranges   ``emit=offsetRanges``: one row per offset range, the sink reads the records (the
               path with no record in the JVM at all);
  spark_tuned  Spark's own ``kafka`` source and sink, tuned (``bench.throughput``).
Each run's CPU per role (``bench.cpu``) is over its timed batches; the report is CPU ms per MB of
the input's values per role (the JVM's per-MB cost with and without the bytes), records/s, and
the 1-minute load before and after every run. Medians [min-max] over the rounds; a run that
failed twice (``bench.common.run_job`` retries once) is kept under ``failed`` and left out.

    python -m bench.size_bytes [--rounds 3] [--sizes 1024] [--run-mb 200] [--partial F]
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from unittest import mock

from bench import method, throughput
from bench.common import load_avg, write_result
from bench.size_profile import BATCHES, records_for
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster

CONFIGS = ("eos", "eos_novalue", "eos_refs", "eos_ranges", "spark_tuned")
JOB = Path(__file__).with_name("size_bytes_job.py")
# arms of size_bytes_job, by their source options (no emit=valueRefs: the source without values)
JOB_ARMS: dict[str, dict[str, str]] = {"eos_novalue": {}, "eos_refs": {"emit": "valueRefs"}}


def run(inp: throughput.Input, name: str) -> dict:
    if name in JOB_ARMS:
        with mock.patch.object(throughput, "JOB", JOB):  # k2k_job's arguments
            return throughput.spark_run(inp, "kafka-eos", "kafka-eos", "exactly_once", source_options=JOB_ARMS[name])
    return throughput.run_config(inp, name)


def ms_per_mb(cpu_s_per_m: dict, size: int) -> dict:
    """CPU seconds per million records per role (``<role>_s_per_m``) -> CPU ms per MB of values."""
    return {role.removesuffix("_s_per_m"): round(s * 1000 / size, 2) for role, s in cpu_s_per_m.items()
            if role.endswith("_s_per_m")}


def summarize(runs: dict[str, list[dict]], size: int) -> dict:
    """Per configuration over its rounds (failed runs left out); ratios over the rounds both ran."""
    ran = {c: v for c, v in runs.items() if v and c != "failed"}
    rates = {c: [x["records_per_s"] for x in v] for c, v in ran.items()}
    ms = {c: [ms_per_mb(x.get("cpu", {}), size) for x in v] for c, v in ran.items()}
    return {"records_per_s": {c: method.summary(v) for c, v in rates.items()},
            "mb_per_s": {c: round(method.summary(v)["median"] * size / 1e6, 2) for c, v in rates.items()},
            "cpu_ms_per_mb": {c: {role: _spread([m.get(role, 0.0) for m in rows]) for role in rows[0]}
                              for c, rows in ms.items() if rows and rows[0]},
            "ratios": {f"{c}_vs_{peer}": _paired(ran[c], ran[peer]) for c in ran for peer in ("spark_tuned", "eos")
                       if peer in ran and c != peer and not (peer == "eos" and c == "spark_tuned")}}


def _spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 2), "min": min(values), "max": max(values)}


def _paired(runs: list[dict], peers: list[dict]) -> dict:
    """``method.round_ratios`` of the rounds in which both configurations ran."""
    peer = {x["round"]: x["records_per_s"] for x in peers}
    both = [(x["records_per_s"], peer[x["round"]]) for x in runs if x["round"] in peer]
    return method.round_ratios([a for a, _ in both], [b for _, b in both]) if both else {}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default="1024")
    p.add_argument("--run-mb", type=int, default=200)
    p.add_argument("--settle-max-s", type=float, default=30.0)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--name", default="size-bytes")
    p.add_argument("--partial", default="", help="a file the runs so far are written to after every run")
    a = p.parse_args()
    configs = tuple(a.configs.split(","))
    loads, out = {"start": load_avg()}, {}
    with LocalKafkaCluster() as cluster:
        brokers = tuple(n.process.pid for n in cluster.nodes if n.process)
        for size in (int(s) for s in a.sizes.split(",")):
            n = records_for(size, a.run_mb)
            inp = throughput.prepare_input(cluster.bootstrap, n, size, max_offsets=n // BATCHES, warmup=n // BATCHES,
                                           broker_pids=brokers)
            runs: dict[str, list[dict]] = {c: [] for c in configs}
            for r in range(a.rounds):
                for name in configs:
                    settled = method.settle(25.0, a.settle_max_s)
                    before = load_avg()
                    try:
                        result = run(inp, name)
                    except RuntimeError as exc:  # a job that failed twice (a loaded machine): kept, not summarised
                        runs.setdefault("failed", []).append({"config": name, "round": r, "error": str(exc)[-600:]})
                        print(f"round {r + 1}/{a.rounds} {size} B {name}: failed", flush=True)
                        continue
                    result.update(round=r, settle=settled, load_avg_1m={"before": before, "after": load_avg()})
                    runs[name].append(result)
                    cpu = ms_per_mb(result.get("cpu", {}), size)
                    print(f"round {r + 1}/{a.rounds} {size} B {name}: {result['records_per_s']:,} rec/s, CPU ms/MB "
                          f"{cpu} (load {before} -> {result['load_avg_1m']['after']})", flush=True)
                    if a.partial:
                        Path(a.partial).write_text(json.dumps({**out, str(size): {"runs": runs}}))
            out[str(size)] = {"records": n, **summarize(runs, size), "runs": runs}
    loads["end"] = load_avg()
    path = write_result(a.name, {"run_mb": a.run_mb, "batches": BATCHES, "rounds": a.rounds, "sizes": out,
                                 "load_avg_1m": loads})
    print(f"written {path}")


if __name__ == "__main__":
    main()
