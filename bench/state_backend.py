"""The state backend of a stateful pipeline: RocksDB (with changelog checkpointing) against Spark's
HDFS-backed default (issue 65 item 3: the default for new stateful pipelines, chosen by measurement).

One local broker, one input topic of ``--records`` JSON events (``PARTITIONS`` partitions, keyed by
one of ``--keys`` keys, event times spread over ``SPAN_MINUTES`` minutes, up to 2 s out of order),
written once. A keyed windowed count (2-minute tumbling windows, 30-second watermark, exactly-once,
trigger 0 s, ``--max-offsets`` a batch) runs as ``kafka-eos run P --once`` from a fresh checkpoint
into a fresh output topic, per run, with ``state.backend`` ``hdfs`` and ``rocksdb`` in turn over
``--rounds`` rounds, the order flipping each round, after one warm-up run not counted. Per run: the
rate (records of the batches after the first / the sum of their durations, as ``bench.method``
takes a steady state), batch p50 and p95 (ms, the batches after the first), the peak RSS of the
JVM (driver and executor in local mode: RocksDB's memory is native, in it) and the peak PSS of the
whole tree (``bench.memory``, sampled every second), the state's size on disk, the 1-minute load
before and after, and whether the output is exact (every window the watermark closed once, with
its count). Per arm the median [min-max]; per round the ratios rocksdb / hdfs; ``verdict``.

    python -m bench.state_backend [--rounds 3] [--records 200000] [--max-offsets 20000] [--keys 50000]

Writes ``bench/results/<date>-state-backend.json``; ``make bench`` runs it as the cell ``state``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml
from confluent_kafka import Producer

from bench import method
from bench.common import load_avg, write_result
from bench.memory import TreeSampler
from bench.verify_cost_parts import CLI, cpu_total, pipeline_figures, start

ARMS = ("hdfs", "rocksdb")
RECORDS, MAX_OFFSETS, KEYS = 200_000, 20_000, 50_000
PARTITIONS = 4
SPAN_MINUTES = 8
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
WINDOW_MS, DELAY_MS = 120_000, 30_000
RUN_MAX_S = 900.0
SCHEMA = {"type": "record", "name": "Event", "fields": [
    {"name": "id", "type": "long"}, {"name": "key", "type": "string"}, {"name": "at", "type": "long"}]}
SQL = ("SELECT value.key AS key, named_struct('key', value.key, 'start_ms', unix_millis(window.start), "
       "'n', COUNT(*)) AS value FROM source GROUP BY window(event_time, '2 minutes'), value.key")


def event(i: int, records: int, keys: int) -> tuple[str, int]:
    """The key and event time of record ``i``: keys spread by a stride, time rising with ``i``, +-2 s."""
    return f"k{(i * 7919) % keys}", T0 + i * SPAN_MINUTES * 60_000 // records + (i * 31) % 4000 - 2000


def expected(records: int, keys: int) -> dict[tuple[str, int], int]:
    """(key, window start) -> count of the windows the final watermark closes."""
    counts: dict[tuple[str, int], int] = {}
    events = [event(i, records, keys) for i in range(records)]
    closed_until = max(at for _, at in events) - DELAY_MS
    for key, at in events:
        window = at - at % WINDOW_MS
        if window + WINDOW_MS <= closed_until:
            counts[(key, window)] = counts.get((key, window), 0) + 1
    return counts


def produce_events(bootstrap: str, topic: str, records: int, keys: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000})
    for i in range(records):
        key, at = event(i, records, keys)
        while True:
            try:
                producer.produce(topic, json.dumps({"id": i, "key": key, "at": at}).encode(), key.encode())
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def pipeline_file(directory: Path, bootstrap: str, source: str, sink: str, backend: str, max_offsets: int) -> Path:
    from integration_tests.kafka_tools import unique
    doc = {"version": 1, "name": f"state-{backend}",
           "source": {"kafka": {"bootstrap_servers": bootstrap}, "topics": [source], "starting_offsets": "earliest",
                      "format": "json", "schema": {"inline": SCHEMA}, "max_offsets_per_trigger": max_offsets},
           "transform": {"watermark": {"column": "event_time", "expression": "timestamp_millis(value.at)",
                                       "delay": "30 seconds"}, "sql": SQL},
           "sink": {"kafka": {"bootstrap_servers": bootstrap}, "topic": sink, "format": "json",
                    "transactional_id_prefix": unique("sbench")},
           "checkpoint": {"location": str(directory / "checkpoint"), "trigger": "0 seconds"},
           "state": {"backend": backend}}
    path = directory / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def output_exact(bootstrap: str, sink: str, want: dict[tuple[str, int], int]) -> bool:
    """Every closed window once, with its count, and nothing else (read_committed)."""
    from integration_tests.kafka_tools import read_all
    seen: dict[tuple[str, int], int] = {}
    for message in read_all(bootstrap, sink, idle_s=2.0, timeout_s=300):
        value = json.loads(message.value())
        window = (value["key"], value["start_ms"])
        if window in seen:
            return False
        seen[window] = value["n"]
    return seen == want


def batch_quantiles(lines: list[tuple[float, str]]) -> dict:
    """p50 and p95 of the batch durations after the first (ms)."""
    from bench.verify_cost_parts import BATCH_LINE
    ms = [int(m[3]) for _, line in lines if (m := BATCH_LINE.search(line))][1:]
    if len(ms) < 2:
        return {"batch_p50_ms": ms[0] if ms else None, "batch_p95_ms": ms[0] if ms else None}
    p95 = statistics.quantiles(ms, n=20, method="inclusive")[-1]
    return {"batch_p50_ms": round(statistics.median(ms)), "batch_p95_ms": round(p95)}


def one_run(bootstrap: str, source: str, backend: str, max_offsets: int, workdir: Path,
            want: dict[tuple[str, int], int]) -> dict:
    """One ``kafka-eos run --once`` of ``backend`` into a fresh output topic and checkpoint."""
    from integration_tests.kafka_tools import create_topic, unique
    from integration_tests.pipeline_runs import kill_group
    directory = Path(tempfile.mkdtemp(prefix=f"{backend}-", dir=workdir))
    sink = create_topic(bootstrap, unique("sbench-out"), PARTITIONS)
    path = pipeline_file(directory, bootstrap, source, sink, backend, max_offsets)
    began = time.time()
    run = start(["run", str(path), "--once"], directory / "run.log")
    memory = TreeSampler(run[0].pid, CLI, interval=1.0).start()
    try:
        code = run[0].wait(RUN_MAX_S)
    except subprocess.TimeoutExpired:
        kill_group(run[0])
        raise RuntimeError(f"{backend}: the run did not end in {RUN_MAX_S:.0f} s:\n{run[1].tail()}") from None
    finally:
        memory.stop()
    run[1].thread.join(10)
    if code != 0:
        raise RuntimeError(f"{backend}: kafka-eos run --once exited {code}:\n{run[1].tail()}")
    peaks = memory.peaks()
    state = directory / "checkpoint" / "state"
    return {"backend": backend, "wall_s": round(time.time() - began, 2), "pipeline_cpu_s": cpu_total(run[2]),
            **pipeline_figures(run[1].lines), **batch_quantiles(run[1].lines),
            "jvm_peak_rss_mb": peaks["driver_jvm_mb"], "tree_peak_pss_mb": peaks["total_pss_mb"],
            "state_mb": round(sum(p.stat().st_size for p in state.rglob("*") if p.is_file()) / 2**20, 1),
            "output_exact": output_exact(bootstrap, sink, want)}


FIGURES = ("records_per_s", "batch_p50_ms", "batch_p95_ms", "jvm_peak_rss_mb", "tree_peak_pss_mb", "state_mb")


def summarize(runs: dict[str, list[dict]]) -> dict:
    """Per figure and arm the summary of the rounds; the per-round ratios rocksdb / hdfs; the verdict."""
    out = {figure: {arm: method.summary([r[figure] for r in rs]) for arm, rs in runs.items()} for figure in FIGURES}
    ratios = {figure: method.round_ratios([r[figure] for r in runs["rocksdb"]], [r[figure] for r in runs["hdfs"]])
              for figure in ("records_per_s", "batch_p95_ms", "jvm_peak_rss_mb", "tree_peak_pss_mb")}
    exact = all(r["output_exact"] for rs in runs.values() for r in rs)
    return {**out, "ratio_rocksdb_to_hdfs": ratios, "output_exact": exact, "verdict": verdict(ratios)}


def verdict(ratios: dict) -> str:
    """``rocksdb``: faster in every round, or within 5 % of HDFS's rate (median) with a smaller JVM in
    every round; ``hdfs``: slower in every round by more than 5 %; else ``inconclusive`` (keep Spark's)."""
    rate, jvm = ratios["records_per_s"], ratios["jvm_peak_rss_mb"]
    if rate["min"] > 1.0 or (0.95 <= rate["median"] and jvm["max"] < 1.0):
        return "rocksdb"
    if rate["max"] < 0.95:
        return "hdfs"
    return "inconclusive"


def measure(bootstrap: str, rounds: int, settle: Callable[[], dict], log: Callable[[str], None] = print,
            records: int = RECORDS, max_offsets: int = MAX_OFFSETS, keys: int = KEYS) -> dict:
    """A warm-up run, then ``rounds`` rounds of ``ARMS`` (order flipped each round) over one input topic."""
    from integration_tests.kafka_tools import create_topic, unique
    source = create_topic(bootstrap, unique("sbench-in"), PARTITIONS)
    started = time.monotonic()
    produce_events(bootstrap, source, records, keys)
    want = expected(records, keys)
    log(f"state backend: {records:,} events, {keys:,} keys, {PARTITIONS} partitions in "
        f"{time.monotonic() - started:.1f} s; {len(want):,} closed windows; {rounds} rounds of {', '.join(ARMS)}")
    runs: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    loads = {"start": load_avg()}
    with tempfile.TemporaryDirectory(prefix="state-backend-") as workdir:
        settle()
        warm = one_run(bootstrap, source, "rocksdb", max_offsets, Path(workdir), want)
        log(f"state backend warm-up (rocksdb, not counted): {warm['records_per_s']:,} rec/s, wall {warm['wall_s']} s")
        for r in range(rounds):
            for arm in ARMS if r % 2 == 0 else ARMS[::-1]:
                settled, before = settle(), load_avg()
                result = one_run(bootstrap, source, arm, max_offsets, Path(workdir), want)
                result.update(round=r, settle=settled, load_avg_1m={"before": before, "after": load_avg()})
                runs[arm].append(result)
                log(f"state backend round {r + 1}/{rounds} {arm}: {result['records_per_s']:,} rec/s, batch p50 "
                    f"{result['batch_p50_ms']} p95 {result['batch_p95_ms']} ms, JVM {result['jvm_peak_rss_mb']} MB, "
                    f"state {result['state_mb']} MB, exact {result['output_exact']}; load {before} -> "
                    f"{result['load_avg_1m']['after']}")
    loads["end"] = load_avg()
    return {"input": {"records": records, "keys": keys, "partitions": PARTITIONS, "span_minutes": SPAN_MINUTES,
                      "max_offsets_per_trigger": max_offsets, "window": "2 minutes", "watermark_delay": "30 seconds",
                      "closed_windows": len(want), "trigger_s": 0},
            "arms": list(ARMS), "rounds": rounds, "load_avg_1m": loads, **summarize(runs), "runs": runs}


def lines(result: dict) -> list[str]:
    inp = result["input"]
    out = [f"state backend ({inp['records']:,} events, {inp['keys']:,} keys, {inp['window']} windows, batches of "
           f"{inp['max_offsets_per_trigger']:,}; {result['rounds']} rounds, load {result['load_avg_1m']}), "
           "median [min-max]:"]
    for figure in FIGURES:
        out.append(f"  {figure}: " + ", ".join(f"{arm} {s['median']:,} [{s['min']:,}-{s['max']:,}]"
                                               f"{' NOISY' if s['noisy'] else ''}" for arm, s in result[figure].items()))
    out.append("  rocksdb / hdfs per round, median [min-max]: " + ", ".join(
        f"{k} {v['median']} [{v['min']}-{v['max']}]" for k, v in result["ratio_rocksdb_to_hdfs"].items()))
    out.append(f"  output exact in every run: {result['output_exact']}; verdict: {result['verdict']}")
    return out


def main() -> None:
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--records", type=int, default=RECORDS)
    p.add_argument("--max-offsets", type=int, default=MAX_OFFSETS)
    p.add_argument("--keys", type=int, default=KEYS)
    p.add_argument("--settle-max-s", type=float, default=60.0)
    a = p.parse_args()
    with LocalKafkaCluster() as cluster:
        result = measure(cluster.bootstrap, a.rounds, lambda: method.settle(25, a.settle_max_s),
                         records=a.records, max_offsets=a.max_offsets, keys=a.keys)
    path = write_result("state-backend", result)
    print("\n".join(lines(result)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
