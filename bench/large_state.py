"""Large state (issue 65 item 4): a keyed windowed count and a watermarked dedup at 1M and 10M
distinct keys; kafka-eos with ``state.backend: hdfs`` (Spark's default provider) and ``rocksdb``
(changelog checkpointing) against Spark's own Kafka source and sink on the same SQL (default
provider, producer and consumer tuned as ``bench.throughput`` tunes them), in the same rounds.

Input and queries: ``bench.large_state_input``; a run and its steps: ``bench.large_state_arms``.
Per key count one input topic of 4 partitions is written once; per query ``--rounds`` rounds of
the arms, the order flipping each round (no warm-up run: each run is a cold JVM, as a restart is).
Every run is its own process with the same heap (``--heap``, local[2], 2 shuffle partitions: 2
state stores). Per run: records/s (steady state, ``bench.method``), batch p50/p95, the JVM's peak
RSS and the tree's peak PSS (main run and restart; local mode: driver and executor are one JVM,
RocksDB's memory native inside it), checkpoint and state size on disk, restart to first commit,
for kafka-eos windowed runs savepoint and restore seconds, the 1-minute load before and after, and
whether the output is exact (a run whose output is not, or whose step failed, is flagged and kept
out of the medians; its failure and log tail are in the file). Per arm the median [min-max], per
round the ratios rocksdb / hdfs and hdfs / spark.

    python -m bench.large_state [--keys 1000000] [--queries windowed,dedup] [--rounds 3] [--heap 2g]

Writes ``bench/results/<date>-large-state-<keys>.json``; ``make bench`` runs it as the cell
``large_state`` (1M keys).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from confluent_kafka import Producer

from bench import method
from bench.common import load_avg, write_result
from bench.large_state_arms import PARTITIONS, Cell, run_arm
from bench.large_state_input import QUERIES, event, payload, records

ARMS = ("hdfs", "rocksdb", "spark")
FIGURES = ("records_per_s", "batch_p50_ms", "batch_p95_ms", "jvm_peak_rss_mb", "tree_peak_pss_mb", "checkpoint_mb",
           "state_mb", "restart_s", "savepoint_s", "restore_s")
RATIOS = {"rocksdb/hdfs": ("rocksdb", "hdfs"), "hdfs/spark": ("hdfs", "spark"), "rocksdb/spark": ("rocksdb", "spark")}


def produce_input(bootstrap: str, topic: str, keys: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000})
    started = time.monotonic()
    for i in range(records(keys)):
        n, key, at = event(i, keys)
        while True:
            try:
                producer.produce(topic, payload(n, key, at), key.encode())
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(300)
    return round(time.monotonic() - started, 1)


def order(r: int, arms: tuple[str, ...]) -> tuple[str, ...]:
    return arms if r % 2 == 0 else arms[::-1]


def summarize(runs: dict[str, list[dict]]) -> dict:
    """Per figure and arm the summary of its exact runs; per round the ratios of two arms' rates, p95
    and JVM peaks (rounds where both were exact); which runs were flagged and why."""
    good = {arm: [r for r in rs if r["output_exact"]] for arm, rs in runs.items()}
    out: dict = {figure: {arm: method.summary(values) for arm, rs in good.items()
                          if (values := [r[figure] for r in rs if r.get(figure) is not None])}
                 for figure in FIGURES}
    ratios: dict = {}
    for name, (a, b) in RATIOS.items():
        by_round = {y["round"]: y for y in runs.get(b, []) if y["output_exact"]}
        pairs = [(x, by_round[x["round"]]) for x in runs.get(a, []) if x["output_exact"] and x["round"] in by_round]
        if pairs:
            ratios[name] = {f: method.round_ratios([x[f] for x, _ in pairs], [y[f] for _, y in pairs])
                            for f in ("records_per_s", "batch_p95_ms", "jvm_peak_rss_mb", "restart_s")}
    flagged = [{"arm": r["arm"], "round": r["round"], "failures": r["failures"], "output": r["output"]}
               for rs in runs.values() for r in rs if not r["output_exact"]]
    return {**out, "ratios": ratios, "flagged": flagged, "all_exact": not flagged}


def measure(bootstrap: str, keys: int, queries: list[str], rounds: int, heap: str, settle: Callable[[], dict],
            log: Callable[[str], None] = print, arms: tuple[str, ...] = ARMS, deadline: float = 0.0,
            savepoints: bool = True) -> dict:
    """``deadline`` (epoch s, 0: none): a run that would end after it, by its arm's longest run so far
    (none yet: any arm's), is not started and is listed in ``cut`` (the machine's timed windows)."""
    from integration_tests.kafka_tools import create_topic, unique
    source = create_topic(bootstrap, unique("lstate-in"), PARTITIONS)
    produce_s = produce_input(bootstrap, source, keys)
    log(f"large state: {records(keys):,} events of {keys:,} keys produced in {produce_s} s; {rounds} rounds of "
        f"{', '.join(arms)} per query ({', '.join(queries)}), heap {heap}")
    result: dict = {"input": {"keys": keys, "records": records(keys), "partitions": PARTITIONS,
                              "max_offsets_per_trigger": max(keys // 10, 1), "produce_s": produce_s},
                    "heap": heap, "arms": list(arms), "rounds": rounds, "savepoints": savepoints, "queries": {}}
    longest: dict[str, float] = {}  # per arm its longest run so far (any query): what its next run may take
    with tempfile.TemporaryDirectory(prefix="large-state-") as workdir:
        for name in queries:
            cell = Cell(bootstrap, source, keys, QUERIES[name], max(keys // 10, 1), heap, Path(workdir), savepoints)
            runs: dict[str, list[dict]] = {arm: [] for arm in arms}
            for r in range(rounds):
                for arm in order(r, arms):
                    for done in (x for rs in runs.values() for x in rs):
                        longest[done["arm"]] = max(longest.get(done["arm"], 0.0), done["wall_s"])
                    if deadline and time.time() + longest.get(arm, max(longest.values(), default=0.0)) > deadline:
                        result.setdefault("cut", []).append({"query": name, "round": r, "arm": arm})
                        continue
                    settled, began = settle(), time.time()
                    run = run_arm(cell, arm)
                    run.update(round=r, settle=settled, wall_s=round(time.time() - began, 1))
                    runs[arm].append(run)
                    log(line_of(name, r, rounds, run))
            result["queries"][name] = {"sql": cell.query.sql, "watermark_delay": cell.query.delay,
                                       **summarize(runs), "runs": runs}
    return result


def combine(documents: list[dict]) -> dict:
    """One summary over the runs of several result files of the same key count (a cell continued in
    another process, e.g. after the machine's timed window): rounds numbered on across the files."""
    out: dict = {"input": documents[0]["input"], "heap": documents[0]["heap"], "arms": documents[0]["arms"],
                 "combined_from": [d.get("file") for d in documents], "queries": {}}
    first = 0
    merged: dict[str, dict[str, list[dict]]] = {}
    for d in documents:
        used = [r["round"] for q in d["queries"].values() for rs in q["runs"].values() for r in rs]
        for name, q in d["queries"].items():
            for arm, rs in q["runs"].items():
                merged.setdefault(name, {}).setdefault(arm, []).extend(
                    {**r, "round": first + r["round"], "file": d.get("file")} for r in rs)
        first += max(used, default=-1) + 1
    for name, runs in merged.items():
        out["queries"][name] = {**summarize(runs), "runs": runs}
    out["rounds"] = first
    return out


def line_of(query: str, r: int, rounds: int, run: dict) -> str:
    figures = ", ".join(f"{f} {run[f]}" for f in FIGURES if run.get(f) is not None)
    return (f"large state {query} round {r + 1}/{rounds} {run['arm']}: {figures}; exact {run['output_exact']}"
            f"{' FAILED ' + str(run['failures']) if run['failures'] else ''}; load {run['load_avg_1m']}")


def lines(result: dict) -> list[str]:
    inp = result["input"]
    out = []
    for name, q in result["queries"].items():
        out.append(f"large state {name} ({inp['keys']:,} keys, {inp['records']:,} records, batches of "
                   f"{inp['max_offsets_per_trigger']:,}, heap {result['heap']}; {result['rounds']} rounds), "
                   "median [min-max] of the exact runs:")
        for figure in FIGURES:
            if q[figure]:
                out.append(f"  {figure}: " + ", ".join(f"{arm} {s['median']:,} [{s['min']:,}-{s['max']:,}] "
                                                       f"({len(s['samples'])})" for arm, s in q[figure].items()))
        for ratio, figures in q["ratios"].items():
            out.append(f"  {ratio} per round: " + ", ".join(f"{f} {v['median']} [{v['min']}-{v['max']}]"
                                                            for f, v in figures.items()))
        out.append(f"  flagged runs: {q['flagged'] or 'none'}")
    if result.get("cut"):
        out.append(f"  not run (deadline): {result['cut']}")
    return out


def main(argv: list[str] | None = None) -> None:
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--queries", default="windowed,dedup")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--heap", default="2g", help="spark.driver.memory of every run (local mode: the one JVM)")
    p.add_argument("--settle-max-s", type=float, default=30.0)
    p.add_argument("--name", default=None, help="result name (default: large-state-<keys>)")
    p.add_argument("--no-savepoints", action="store_true", help="no savepoint and restore (they double a run)")
    p.add_argument("--until", default="", metavar="HH:MM", help="UTC: start no run that would end after it")
    p.add_argument("--combine", nargs="+", metavar="FILE", help="no runs: one summary of these result files "
                   "(the same key count), written as --name")
    a = p.parse_args(argv)
    if a.combine:
        documents = [{**json.loads(Path(f).read_text()), "file": Path(f).name} for f in a.combine]
        combined = combine(documents)
        path = write_result(a.name or f"large-state-{a.keys}-combined", combined)
        print("\n".join(lines(combined)))
        print(f"wrote {path}")
        return
    deadline = 0.0
    if a.until:
        now = datetime.now(timezone.utc)
        hour, minute = map(int, a.until.split(":"))
        deadline = now.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()
    loads = {"start": load_avg()}
    with LocalKafkaCluster() as cluster:
        result = measure(cluster.bootstrap, a.keys, a.queries.split(","), a.rounds, a.heap,
                         lambda: method.settle(25, a.settle_max_s), arms=tuple(a.arms.split(",")), deadline=deadline,
                         savepoints=not a.no_savepoints)
    result["load_avg_1m"] = {**loads, "end": load_avg()}
    path = write_result(a.name or f"large-state-{a.keys}", result)
    print("\n".join(lines(result)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
