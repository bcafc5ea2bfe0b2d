"""The write evidence's ``TaskEvidence.place`` before and after a change, by record size (issue 68.2).

Pure CPU, no broker: one task's keyed records of each size (about ``--mb`` MB in Arrow batches
of at most 10,000 rows and 20 MB, as Spark hands them to the sink) placed on 4 partitions by
the installed older commit's ``write_evidence`` (``--before-site DIR``, as ``bench.size_ab``)
and by the working tree's, interleaved, the order flipping each round; CPU ms per MB, medians
[min-max] and the per-round ratio after / before.

    python -m bench.size_place --before-site DIR [--rounds 7] [--mb 40]
"""
from __future__ import annotations

import argparse
import importlib.util
import random
import time
from pathlib import Path

import pyarrow as pa

from bench.common import load_avg, write_result
from bench.method import round_ratios
from kafka_eos.txn.writer import write_evidence

SIZES = (100, 1024, 10240, 102400)


def _before(site: str):
    path = Path(site, "kafka_eos", "txn", "writer", "write_evidence.py")
    spec = importlib.util.spec_from_file_location("write_evidence_before", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def batches(size: int, mb: int) -> list[pa.RecordBatch]:
    n = mb * 1_000_000 // size
    rows = max(1, min(10_000, 20_000_000 // size))
    keys = pa.array([b"order-%d" % i for i in range(n)], pa.binary())
    values = pa.array([b"x" * size] * n, pa.binary())
    whole = pa.RecordBatch.from_arrays([keys, values], ["key", "value"])
    return [whole.slice(i, rows) for i in range(0, n, rows)]


def cpu_ms_per_mb(module, rows: list[pa.RecordBatch], mb: int) -> float:
    evidence = module.TaskEvidence("murmur2_random", lambda topic: 4, random.Random(1))
    started = time.process_time()
    for batch in rows:
        evidence.place(batch, ["out"] * batch.num_rows, None)
    evidence.digests()
    return (time.process_time() - started) * 1000 / mb


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before-site", required=True)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--mb", type=int, default=40)
    a = p.parse_args()
    arms = {"before": _before(a.before_site), "after": write_evidence}
    out: dict = {"loads": [load_avg()]}
    for size in SIZES:
        rows = batches(size, a.mb)
        runs: dict[str, list[float]] = {"before": [], "after": []}
        for r in range(a.rounds):
            for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                runs[name].append(round(cpu_ms_per_mb(arms[name], rows, a.mb), 3))
        out[str(size)] = {"cpu_ms_per_mb": runs, "after_vs_before": round_ratios(runs["after"], runs["before"])}
        out["loads"].append(load_avg())
        print(size, out[str(size)], flush=True)
    print(f"written {write_result('size-place', {'rounds': a.rounds, 'mb': a.mb, **out})}")


if __name__ == "__main__":
    main()
