"""Fair sharing in a group of pipelines (issue 67): does one pipeline catching up on a backlog slow the others?

Arms, in a rotating order each round:
  alone   one small copy pipeline in an application of its own (`kafka-eos run f1.yaml`);
  quiet   ten copy pipelines in one application, f0 on an empty topic: what the group costs by itself;
  backlog the same ten, f0 on a backlog of ``--backlog`` records (``max_offsets_per_trigger`` 20,000 a second of trigger).
Every small pipeline reads a steady ``--rate`` records/s (100 B, 2 partitions, ``--trigger``: 1 s). Once
every pipeline has committed a batch, the progress lines of ``--window`` seconds are kept: the
small pipelines' batch durations (median, p95), and f0's records read (it must still be catching
up, or the window measured no contention). Goal: backlog's median <= 2 x alone's; backlog / quiet
is what the backlog itself costs the others, quiet / alone what sharing 2 cores with 9 more does.

    python -m bench.group_fairness [--rounds 2] [--backlog 1000000] [--window 60]
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import load_avg, produce_bulk, write_result
from bench.pipeline_groups_parts import batches
from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env

SMALL = [f"f{i}" for i in range(1, 10)]


def pipeline(folder: Path, name: str, bootstrap: str, source: str, cap: int, trigger: str = "1 second") -> Path:
    cluster = {"bootstrap_servers": bootstrap}
    doc = {"version": 1, "name": name,
           "source": {"kafka": cluster, "topics": [source], "starting_offsets": "earliest", "max_offsets_per_trigger": cap},
           "sink": {"kafka": cluster, "topic": f"{source}-out", "transaction_timeout_ms": 300_000},
           "checkpoint": {"location": str(folder / "checkpoints" / name), "trigger": trigger}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def topics(bootstrap: str, run: str) -> dict[str, str]:
    names = {name: f"fair-{run}-{name}" for name in ["f0", "f0q", *SMALL]}
    wanted = [NewTopic(t, 2, replication_factor=-1) for t in names.values()]
    wanted += [NewTopic(f"{t}-out", 2, replication_factor=-1) for t in names.values()]
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures need the client alive
    for future in admin.create_topics(wanted).values():
        future.result(30)
    return names


def steady(bootstrap: str, sources: list[str], rate: int, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    while not stop.wait(1.0):
        for topic in sources:
            for i in range(rate):
                producer.produce(topic, b"x" * 96 + b"%04d" % i)
        producer.poll(0)
    producer.flush(30)


def parsed(text: str) -> dict[str, list[tuple[int, int]]]:
    """Per pipeline, its progress lines' (records read, batch ms) (``pipeline_groups_parts.batches``)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for batch in batches(text):
        out.setdefault(batch.name, []).append((batch.read, batch.ms))
    return out


def measure(files: list[Path], names: list[str], log: Path, window_s: float, bound_s: float = 300.0) -> dict:
    """Run ``kafka-eos run files``; the lines of ``window_s`` once every pipeline committed; then SIGTERM."""
    conf = [arg for k, v in SMALL_CONF.items() for arg in ("--conf", f"{k}={v}")]
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kafka_eos.connectors.cli", "run", *map(str, files), *conf],
                                env=python_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + bound_s
        while not all(parsed(log.read_text(errors="replace")).get(n) for n in names if n != "f0q"):  # f0q: no data
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"not every pipeline committed: {log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        before = {n: len(v) for n, v in parsed(log.read_text(errors="replace")).items()}
        time.sleep(window_s)
        after = parsed(log.read_text(errors="replace"))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return {n: after.get(n, [])[before.get(n, 0):] for n in names}


def summary(batches: list[tuple[int, int]]) -> dict:
    ms = sorted(b for _, b in batches)
    if not ms:
        return {"batches": 0}
    return {"batches": len(ms), "p50_ms": statistics.median(ms), "p95_ms": ms[min(len(ms) - 1, int(0.95 * len(ms)))],
            "records": sum(r for r, _ in batches)}


def ratios(arms: dict) -> dict[str, float]:
    """The small pipelines' median batch: backlog / alone (the goal: <= 2), backlog / quiet, quiet / alone."""
    p50 = {arm: arms[arm]["small"]["p50_ms"] for arm in ("alone", "quiet", "backlog")}
    return {"backlog/alone": round(p50["backlog"] / p50["alone"], 2), "backlog/quiet": round(p50["backlog"] / p50["quiet"], 2),
            "quiet/alone": round(p50["quiet"] / p50["alone"], 2)}


def one_round(bootstrap: str, folder: Path, r: int, backlog: int, rate: int, window_s: float,
              trigger: str = "1 second") -> dict:
    names = topics(bootstrap, f"{r}-{os.getpid()}")
    produce_bulk(bootstrap, names["f0"], backlog)
    seconds = max(1, int(trigger.split()[0]))
    files = {n: pipeline(folder / f"r{r}", n, bootstrap, t, (20_000 if n.startswith("f0") else 2_000) * seconds, trigger)
             for n, t in names.items()}
    stop = threading.Event()
    feeder = threading.Thread(target=steady, args=(bootstrap, [names[n] for n in SMALL], rate, stop), daemon=True)
    feeder.start()
    try:
        result = {}
        arms = ("alone", "quiet", "backlog")
        for arm in arms[r % 3:] + arms[:r % 3]:
            first = {"alone": [], "quiet": ["f0q"], "backlog": ["f0"]}[arm]
            chosen = [*first, *(SMALL if arm != "alone" else ["f1"])]
            files_arm = ([files[n] for n in chosen] if arm != "alone" else
                         [pipeline(folder / f"r{r}a", "f1", bootstrap, names["f1"], 2_000, trigger)])
            lines = measure(files_arm, chosen, folder / f"r{r}-{arm}.log", window_s)
            small = [b for n in chosen if n not in ("f0", "f0q") for b in lines[n]]
            result[arm] = {"small": summary(small), **({"f0": summary(lines["f0"])} if arm == "backlog" else {})}
        return result
    finally:
        stop.set()
        feeder.join(30)


def main(argv: list[str] | None = None) -> None:
    from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--backlog", type=int, default=1_000_000)
    p.add_argument("--rate", type=int, default=20, help="records/s into each small pipeline")
    p.add_argument("--window", type=float, default=60.0)
    p.add_argument("--trigger", default="1 second", help="every pipeline's checkpoint.trigger")
    a = p.parse_args(argv)
    loads = [load_avg()]
    with LocalKafkaCluster() as cluster, tempfile.TemporaryDirectory(prefix="kafka-eos-fair-") as tmp:
        rounds = [one_round(cluster.bootstrap, Path(tmp), r, a.backlog, a.rate, a.window, a.trigger) for r in range(a.rounds)]
    loads.append(load_avg())
    result = {"rounds": rounds, "ratios_p50": [ratios(x) for x in rounds], "load_avg_1m": loads, "args": vars(a)}
    path = write_result("group-fairness", result)
    for x in rounds:
        print(f"alone {x['alone']['small']}\n  quiet {x['quiet']['small']}\n  backlog {x['backlog']['small']}"
              f"\n  f0 {x['backlog']['f0']}\n  {ratios(x)}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
