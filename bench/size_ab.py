"""Before/after of a change to kafka-eos's data path (issue 68.2), interleaved, on one broker.

The ``before`` arm runs an installed copy of an older commit: ``--before-site DIR`` holds it
(``git archive <commit> | tar -x -C src; pip install --no-deps --no-build-isolation --target DIR src``);
its Spark jobs get ``PYTHONPATH=DIR``, the ``after`` arm none (the working tree's editable
install), and both are started from ``NEUTRAL_CWD`` (Python workers put their working directory
first on their path: from the repository it would shadow the installed copy). The ``before``
arm checks, after its first run, that its workers compiled ``DIR``'s modules (``__pycache__``).

Configurations per record size, each round in turn (``bench.throughput``'s settings):
``eos_before``, ``eos_after``, ``alo_before``, ``alo_after`` (kafka-eos exactly-once /
at-least-once) and ``spark_tuned`` (``--configs`` picks some). Records per size: about ``--run-mb``
MB, 4 batches.

    python -m bench.size_ab --before-site DIR [--rounds 3] [--sizes 1024,10240] [--run-mb 200]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from bench import method, throughput
from bench.common import load_avg, write_result
from bench.size_profile import BATCHES, records_for
from kafka_eos.connectors.dev.local_kafka import LocalKafkaCluster

CONFIGS = ("eos_before", "eos_after", "alo_before", "alo_after", "spark_tuned")
NEUTRAL_CWD = Path(__file__).resolve().parent / "results"
NO_PYC = "PYTHONDONTWRITEBYTECODE"


@contextmanager
def arm(site: str | None) -> Iterator[None]:
    """Spark jobs started in this block run the kafka-eos installed at ``site`` (None: the tree's)."""
    saved, cwd = {k: os.environ.get(k) for k in ("PYTHONPATH", NO_PYC)}, os.getcwd()
    os.chdir(NEUTRAL_CWD)
    os.environ.pop("PYTHONPATH", None)
    if site:  # its workers leave compiled files in ``site``: the proof they ran it (``_compiled``)
        os.environ["PYTHONPATH"] = site
        os.environ.pop(NO_PYC, None)
    try:
        yield
    finally:
        os.chdir(cwd)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run(inp: throughput.Input, name: str, site: str) -> dict:
    if name == "spark_tuned":
        with arm(None):
            return throughput.run_config(inp, name)
    guarantee = "exactly_once" if name.startswith("eos") else "at_least_once"
    with arm(site if name.endswith("before") else None):
        return throughput.spark_run(inp, "kafka-eos", "kafka-eos", guarantee)


def _compiled(site: str) -> bool:
    return any(Path(site, "kafka_eos", "txn", "writer").glob("__pycache__/*.pyc"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before-site", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default="1024,10240")
    p.add_argument("--run-mb", type=int, default=200)
    p.add_argument("--settle-max-s", type=float, default=30.0)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--name", default="size-ab")
    p.add_argument("--partial", default="", help="a file the runs so far are written to after every run")
    a = p.parse_args()
    site = str(Path(a.before_site).resolve())
    configs = tuple(a.configs.split(","))
    for cache in Path(site, "kafka_eos").rglob("__pycache__"):
        shutil.rmtree(cache)
    loads = {"start": load_avg()}
    out: dict = {}
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
                    result = run(inp, name, site)
                    if name == "eos_before" and not _compiled(site):
                        raise RuntimeError(f"the before arm did not load {site}")
                    result.update(round=r, settle=settled, load_avg_1m={"before": before, "after": load_avg()})
                    runs[name].append(result)
                    print(f"round {r + 1}/{a.rounds} {size} B {name}: {result['records_per_s']:,} rec/s "
                          f"({result['records_per_s'] * size / 1e6:.1f} MB/s; load {before} -> "
                          f"{result['load_avg_1m']['after']})", flush=True)
                    if a.partial:  # what ran is kept if the run is stopped
                        Path(a.partial).write_text(json.dumps({**out, str(size): {"runs": runs}}))
            rates = {c: [x["records_per_s"] for x in runs[c]] for c in configs}
            pairs = {"eos_after_vs_before": ("eos_after", "eos_before"), "alo_after_vs_before": ("alo_after", "alo_before"),
                     "eos_after_vs_spark_tuned": ("eos_after", "spark_tuned"),
                     "eos_before_vs_spark_tuned": ("eos_before", "spark_tuned"),
                     "alo_after_vs_eos_after": ("alo_after", "eos_after")}
            out[str(size)] = {"records": n, "records_per_s": {c: method.summary(v) for c, v in rates.items()},
                              "ratios": {k: method.round_ratios(rates[x], rates[y]) for k, (x, y) in pairs.items()
                                         if x in rates and y in rates},
                              "cpu_s_per_m": {c: throughput.cpu_medians(runs[c]) for c in configs}, "runs": runs}
    loads["end"] = load_avg()
    path = write_result(a.name, {"run_mb": a.run_mb, "batches": BATCHES, "rounds": a.rounds, "before_site": site,
                                 "sizes": out, "load_avg_1m": loads})
    print(f"written {path}")


if __name__ == "__main__":
    main()
