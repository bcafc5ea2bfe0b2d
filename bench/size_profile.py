"""Where the time goes per byte (issue 68.1): CPU seconds per MB per stage, by record size.

For each record size (``SIZES``: 100 B, 1 KB, 10 KB, 100 KB) one input topic of about ``RUN_MB``
MB (records = RUN_MB MB / size; 4 partitions) is written once; then ``--rounds`` interleaved
rounds run, size after size, these configurations on that topic (``bench.method.settle`` before
each):
  eos          kafka-eos exactly-once on ``kafka-eos-profiled`` (``bench.stage_profile``): the CPU
               of each stage's thread (``profile_hooks``), the processes' CPU per role (``bench.cpu``);
  spark_tuned  Spark's own ``kafka`` source + sink, tuned as in ``bench.throughput``;
  ceiling      the plain confluent-kafka consume -> produce exactly-once loop (``bench.ceiling``);
  perf_produce / perf_consume  Kafka's own ``ProducerPerformance`` / ``ConsumerPerformance``
               (kafka-producer-perf-test / kafka-consumer-perf-test; ``size_tools``) on loopback.
Every Spark run splits its input in ``BATCHES`` batches; the first (worker start, first fetches)
is not timed, so each figure is over the last 3/4 of the run. Stages (``size_stages``) are CPU
seconds per MB of record values, summed over every task of the timed batches. Medians [min-max]
of the rounds; the 1-minute load before and after every run.

    python -m bench.size_profile [--rounds 3] [--sizes 1024,10240,102400,100] [--run-mb 200] [--partial F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Callable

from bench import method, size_stages, size_tools, throughput
from bench.common import load_avg, write_result
from bench.stage_profile import read_lines
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster

SIZES = (1024, 10240, 102400, 100)  # the sizes of the goals first
RUN_MB = 200
BATCHES = 4
CONFIGS = ("eos", "spark_tuned", "ceiling", "perf_produce", "perf_consume")


def records_for(size: int, run_mb: int) -> int:
    return run_mb * 1_000_000 // size


def eos_run(inp: throughput.Input) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        result = throughput.spark_run(inp, "kafka-eos", "kafka-eos", "exactly_once", profile=directory)
        lines = read_lines(Path(directory))
    result["stages_s_per_mb"] = size_stages.cpu_per_mb(lines, result, inp.size)
    return result


def spark_tuned_run(inp: throughput.Input) -> dict:
    result = throughput.run_config(inp, "spark_tuned")
    result["stages_s_per_mb"] = size_stages.roles_per_mb(result.get("cpu", {}), inp.size)
    return result


def ceiling_run(inp: throughput.Input) -> dict:
    from bench.ceiling import python_ceiling
    before = size_tools.broker_cpu(inp.broker_pids)
    result = python_ceiling(inp)
    broker = size_tools.broker_cpu(inp.broker_pids) - before
    mb = result["records"] * inp.size / 1e6
    steady_mb = result["steady_records"] * inp.size / 1e6
    result["stages_s_per_mb"] = {"process": round(result["steady_cpu_s"] / steady_mb, 5),
                                 "broker (whole run)": round(broker / mb, 5)}
    return result


def run_config(name: str, inp: throughput.Input) -> dict:
    if name == "eos":
        return eos_run(inp)
    if name == "spark_tuned":
        return spark_tuned_run(inp)
    if name == "ceiling":
        return ceiling_run(inp)
    if name == "perf_produce":
        return size_tools.produce_perf(inp)
    return size_tools.consume_perf(inp)


def mb_per_s(result: dict, size: int) -> float:
    return round(result["records_per_s"] * size / 1e6, 2)


def suite(inputs: list[throughput.Input], rounds: int, configs: tuple[str, ...], settle: Callable[[], dict],
          log: Callable[[str], None] = print, partial: Path | None = None) -> dict:
    """The interleaved rounds; after every run, the runs so far go to ``partial`` (a long run on a
    shared machine may be stopped: what ran is kept)."""
    runs: dict[str, dict[str, list[dict]]] = {str(i.size): {c: [] for c in configs} for i in inputs}
    for r in range(rounds):
        for inp in inputs:
            for name in configs:
                settled = settle()
                before = load_avg()
                result = run_config(name, inp)
                result.update(round=r, settle=settled, load_avg_1m={"before": before, "after": load_avg()},
                               mb_per_s=mb_per_s(result, inp.size))
                runs[str(inp.size)][name].append(result)
                log(f"round {r + 1}/{rounds} {inp.size} B {name}: {result['mb_per_s']} MB/s "
                    f"(load {before} -> {result['load_avg_1m']['after']})")
                if partial is not None:
                    partial.write_text(json.dumps(runs))
    return {size: {name: summarise(rs) for name, rs in by_config.items()} | {"runs": by_config}
            for size, by_config in runs.items()}


def summarise(results: list[dict]) -> dict:
    """MB/s and every stage's CPU s/MB: median [min-max] over the rounds."""
    stages = sorted({k for r in results for k in r.get("stages_s_per_mb", {})})
    return {"mb_per_s": _spread([r["mb_per_s"] for r in results]),
            "records_per_s": _spread([r["records_per_s"] for r in results]),
            "stages_s_per_mb": {k: _spread([r["stages_s_per_mb"][k] for r in results if k in r["stages_s_per_mb"]],
                                           digits=5) for k in stages}}


def _spread(values: list[float], digits: int = 2) -> dict:
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits), "samples": values}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--run-mb", type=int, default=RUN_MB)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--settle-busy-pct", type=float, default=25.0)
    p.add_argument("--settle-max-s", type=float, default=60.0)
    p.add_argument("--name", default="size-profile")
    p.add_argument("--partial", default="", help="a file the runs so far are written to after every run")
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    configs = tuple(a.configs.split(","))
    loads = {"start": load_avg()}
    with LocalKafkaCluster() as cluster:
        brokers = tuple(n.process.pid for n in cluster.nodes if n.process)
        inputs = []
        for size in sizes:
            n = records_for(size, a.run_mb)
            inputs.append(throughput.prepare_input(cluster.bootstrap, n, size, max_offsets=n // BATCHES,
                                                   warmup=n // BATCHES, broker_pids=brokers))
            print(f"{n:,} x {size} B produced in {inputs[-1].produce_s} s", flush=True)
        partial = Path(a.partial) if a.partial else None
        out = suite(inputs, a.rounds, configs,
                    lambda: method.settle(a.settle_busy_pct, a.settle_max_s), lambda s: print(s, flush=True), partial)
    loads["end"] = load_avg()
    path = write_result(a.name, {"run_mb": a.run_mb, "batches": BATCHES, "rounds": a.rounds, "configs": configs,
                                 "records": {str(i.size): i.records for i in inputs}, "sizes": out,
                                 "load_avg_1m": loads})
    print(size_stages.table(out))
    print(f"written {path}")


if __name__ == "__main__":
    main()
