"""The goals of issue 27, from one ``bench.run`` result: per goal, the measured ratios and whether it is met.

  exactly_once_vs_spark_tuned    kafka-eos exactly-once / Spark tuned >= 1.0: records/s at 100 B
                                 and 1 KB (4 partitions) and at 100 B, 16 partitions; per-batch
                                 time (Spark tuned ms / exactly-once ms) in ``small_batch``
  at_least_once_vs_exactly_once  at-least-once / exactly-once >= 1.0 in every throughput cell
                                 measured; exactly-once ms / at-least-once ms in ``small_batch``
  peak_pss_vs_spark_tuned        exactly-once's peak PSS / Spark tuned's <= 1.3 at 100 B and 1 KB
                                 (one sample each, from the first round of the 4-partition runs)
  latency_p99_vs_spark           kafka-eos exactly-once p99 / Spark's kafka p99 <= 1.0, trigger 1 s

Each figure is the median [min-max] of the per-round ratios of the run. A goal is met when every
one of its cells is measured and met; not met when any measured cell misses; ``met`` is None when
some cells were not measured (a partial run) and none missed.
"""
from __future__ import annotations

import statistics

THROUGHPUT_BOUND = 1.0
PSS_BOUND = 1.3
LATENCY_BOUND = 1.0
LATENCY_TRIGGER_S = 1.0
SIZES = ("100", "1024")


def size_label(size: str) -> str:
    return "1 KB" if size == "1024" else f"{size} B"


def cell(name: str, ratio: dict | None, bound: float, at_least: bool = True, **extra: object) -> dict:
    """One cell of a goal: its ratio (``bench.method.round_ratios``) against ``bound``."""
    if not ratio:
        return {"cell": name, "measured": False, "met": None}
    met = ratio["median"] >= bound if at_least else ratio["median"] <= bound
    return {"cell": name, "measured": True, "median": ratio["median"], "min": ratio["min"], "max": ratio["max"],
            "per_round": ratio.get("per_round", [ratio["median"]]), "met": met, **extra}


def goal(text: str, ratio: str, bound: float, at_least: bool, cells: list[dict]) -> dict:
    missed = any(c["met"] is False for c in cells)
    complete = bool(cells) and all(c["measured"] for c in cells)
    return {"goal": text, "ratio": ratio, "bound": bound, "at_least": at_least,
            "met": False if missed else (True if complete else None), "cells": cells}


def _single(value: float) -> dict:
    return {"median": value, "min": value, "max": value, "per_round": [value]}


def pss_ratio(memory: dict | None, name: str = "eos") -> dict | None:
    """``name`` / Spark tuned peak PSS of one size's sampled runs (None if either is missing)."""
    eos, tuned = (memory or {}).get(name), (memory or {}).get("spark_tuned")
    if not eos or not tuned or not tuned.get("total_pss_mb"):
        return None
    return {**_single(round(eos["total_pss_mb"] / tuned["total_pss_mb"], 3)),
            "eos_mb": eos["total_pss_mb"], "spark_tuned_mb": tuned["total_pss_mb"]}


def latency_ratio(runs: list[dict], trigger_s: float = LATENCY_TRIGGER_S) -> dict | None:
    """Per round kafka-eos p99 / Spark kafka p99 at ``trigger_s`` (rounds with both runs only),
    with the median p99 of each."""
    by_round: dict[int, dict[str, float]] = {}
    for run in runs:
        if run.get("trigger_s") == trigger_s:
            by_round.setdefault(run.get("round", 0), {})[run["format"]] = run["p99"]
    pairs = [(r["kafka-eos"], r["kafka"]) for _, r in sorted(by_round.items()) if {"kafka-eos", "kafka"} <= set(r)]
    if not pairs:
        return None
    per_round = [round(eos / spark, 3) for eos, spark in pairs]
    return {"median": round(statistics.median(per_round), 3), "min": min(per_round), "max": max(per_round),
            "per_round": per_round, "kafka_eos_p99_ms": round(statistics.median(e for e, _ in pairs), 1),
            "spark_p99_ms": round(statistics.median(s for _, s in pairs), 1)}


def goals_27(ratios: dict, cells: dict, memory: dict, latency_runs: list[dict]) -> dict:
    """The goals block. ``ratios`` and ``memory``: per record size (``"100"``, ``"1024"``) the
    4-partition throughput ratios and peak memory; ``cells``: ``bench.cells`` results by name;
    ``latency_runs``: ``bench.latency`` runs."""
    def cell_ratio(name: str, key: str) -> dict | None:
        found = cells.get(name, {})
        return found.get("ratios_ms" if name == "small_batch" else "ratios", {}).get(key)

    vs_tuned = [cell(f"{size_label(s)}, 4 partitions", ratios.get(s, {}).get("eos_vs_spark_tuned"),
                     THROUGHPUT_BOUND) for s in SIZES]
    vs_tuned += [cell("100 B, 16 partitions", cell_ratio("16p", "eos_vs_spark_tuned"), THROUGHPUT_BOUND),
                 cell("small_batch", cell_ratio("small_batch", "spark_tuned_vs_eos"), THROUGHPUT_BOUND)]
    alo_sizes = list(SIZES) + [s for s in ratios if s not in SIZES]
    alo = [cell(f"{size_label(s)}, 4 partitions", ratios.get(s, {}).get("eos_alo_vs_eos"), THROUGHPUT_BOUND)
           for s in alo_sizes]
    alo += [cell("100 B, 16 partitions", cell_ratio("16p", "eos_alo_vs_eos"), THROUGHPUT_BOUND)]
    if "64p" in cells:
        alo.append(cell("100 B, 64 partitions", cell_ratio("64p", "eos_alo_vs_eos"), THROUGHPUT_BOUND))
    alo.append(cell("small_batch", cell_ratio("small_batch", "eos_vs_eos_alo"), THROUGHPUT_BOUND))
    tasks = [cell(f"100 B, {n}", cell_ratio(n, "eos_tasks_vs_spark_tuned"), THROUGHPUT_BOUND)
             for n in ("16p", "64p") if n in cells]
    if "small_batch" in cells:
        tasks.append(cell("small_batch", cell_ratio("small_batch", "spark_tuned_vs_eos_tasks"), THROUGHPUT_BOUND))
    ranges = [cell(f"{size_label(s)}, 4 partitions", ratios.get(s, {}).get("eos_ranges_vs_spark_tuned"),
                   THROUGHPUT_BOUND) for s in SIZES]
    ranges += [cell("100 B, 16 partitions", cell_ratio("16p", "eos_ranges_vs_spark_tuned"), THROUGHPUT_BOUND),
               cell("small_batch", cell_ratio("small_batch", "spark_tuned_vs_eos_ranges"), THROUGHPUT_BOUND)]
    pss = [cell(size_label(s), pss_ratio(memory.get(s)), PSS_BOUND, at_least=False) for s in SIZES]
    ranges_pss = [cell(size_label(s), pss_ratio(memory.get(s), "eos_ranges"), PSS_BOUND, at_least=False)
                  for s in SIZES]
    latency = [cell(f"trigger {LATENCY_TRIGGER_S:g} s", latency_ratio(latency_runs), LATENCY_BOUND, at_least=False)]
    return {
        "exactly_once_vs_spark_tuned": goal(
            "exactly-once >= 1.0x Spark tuned", "eos / spark_tuned records/s; small_batch: spark_tuned ms / eos ms",
            THROUGHPUT_BOUND, True, vs_tuned),
        "exactly_once_tasks_vs_spark_tuned": goal(
            "exactly-once with maxTasksPerBatch=2 >= 1.0x Spark tuned (the cells that ran it)",
            "eos_tasks / spark_tuned records/s; small_batch: spark_tuned ms / eos_tasks ms", THROUGHPUT_BOUND, True,
            tasks),
        "exactly_once_ranges_vs_spark_tuned": goal(
            "exactly-once with emit=offsetRanges (the sink reads the records) >= 1.0x Spark tuned",
            "eos_ranges / spark_tuned records/s; small_batch: spark_tuned ms / eos_ranges ms",
            THROUGHPUT_BOUND, True, ranges),
        "at_least_once_vs_exactly_once": goal(
            "at-least-once >= 1.0x exactly-once everywhere",
            "eos_alo / eos records/s; small_batch: eos ms / eos_alo ms", THROUGHPUT_BOUND, True, alo),
        "peak_pss_vs_spark_tuned": goal(
            "peak PSS <= 1.3x Spark tuned's", "eos / spark_tuned peak PSS of the whole job (one sample)",
            PSS_BOUND, False, pss),
        "peak_pss_ranges_vs_spark_tuned": goal(
            "peak PSS with emit=offsetRanges <= 1.3x Spark tuned's",
            "eos_ranges / spark_tuned peak PSS of the whole job (one sample)", PSS_BOUND, False, ranges_pss),
        "latency_p99_vs_spark": goal(
            "latency at trigger 1 s: p99 <= Spark's own pipeline", "kafka-eos p99 / Spark kafka p99",
            LATENCY_BOUND, False, latency),
    }


def _met(met: bool | None) -> str:
    return {True: "yes", False: "no", None: "incomplete (not every cell measured)"}[met]


def lines(goals: dict) -> list[str]:
    """The report's lines: per goal whether it is met, then its cells."""
    out = []
    for g in goals.values():
        parts = [f"{c['cell']} {c['median']} [{c['min']}-{c['max']}] {_met(c['met'])}" if c["measured"]
                 else f"{c['cell']} not measured" for c in g["cells"]]
        out.append(f"goal {g['goal']} ({g['ratio']}; {'>=' if g['at_least'] else '<='} {g['bound']}): "
                   f"met {_met(g['met'])}; " + "; ".join(parts))
    return out
