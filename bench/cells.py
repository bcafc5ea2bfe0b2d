"""The cells of issue 27 beside the 4-partition throughput runs: 16 and 64 partitions, and small batches.

``16p`` and ``64p``: the method of ``bench.throughput`` (one input topic written once,
interleaved rounds, settling, the steady-state rate) on an input topic of 16 or 64 partitions of
``CELL_SIZE`` (100 B) records in batches of records / 4, trigger 5 s, for ``CELL_CONFIGS``:
kafka-eos with its defaults only (eos, eos_alo, and eos_ranges: a copy, the sink reading the
records with emit=offsetRanges; each reads a batch in as many tasks as local[2] has slots) beside
spark_tuned, whose source runs one task per input partition; per round eos / spark_tuned,
eos_alo / eos and eos_ranges / spark_tuned. Every output topic has as many partitions as the input.

``small_batch``: ``SMALL_BATCH_PARTITIONS`` (8) partitions, 100 B, ``maxOffsetsPerTrigger``
4,000, trigger 1 s, records for ``batches`` (26) batches; the warm-up query runs 5 batches of the
same size. A run's figure is its per-batch time: the median ``triggerExecution`` of the full
batches after the first (``batch_figures``), with the medians of ``addBatch``, ``walCommit`` and ``commitOffsets`` (where
the batch time goes). Per round spark_tuned ms / eos ms (>= 1: kafka-eos at least as fast),
spark_tuned ms / eos_ranges ms, and eos ms / eos_alo ms (>= 1: at-least-once at least as fast as
exactly-once).

``--cells`` of ``bench.run`` picks the parts of the suite (``parse_cells``).
"""
from __future__ import annotations

import statistics
from typing import Callable

from bench import throughput
from bench.method import key_medians, round_ratios, summary

CELL_CONFIGS = ("eos", "eos_alo", "spark_tuned", "eos_ranges")  # kafka-eos with its defaults only (issue 45)
CELL_SIZE = 100
SMALL_BATCH_PARTITIONS = 8
SMALL_BATCH_OFFSETS = 4_000
SMALL_BATCH_TRIGGER_S = 1.0
SMALL_BATCH_BATCHES = 26  # the first is not timed: 25 timed batches
SMALL_BATCH_WARMUP_BATCHES = 5
FULL_BATCH = 0.9
BATCH_STAGES = ("triggerExecution", "addBatch", "walCommit", "commitOffsets")
ALL = ("4p", "16p", "64p", "small_batch", "profile", "scaling", "latency", "commit", "evidence", "verify", "state",
       "large_state", "groups")
# 64p is opt-in (--cells all, or naming it): a kafka-eos run at 64 partitions took ~2.5x the time
# of one at 16 (64 tasks per batch, each with its fixed costs); the cell is the costliest one
# (~10 min estimated on a quiet machine) and no goal of issue 27 needs it.
DEFAULT = tuple(c for c in ALL if c != "64p")


def parse_cells(cells: str = "", skip: str = "", no_profile: bool = False, no_scaling: bool = False) -> list[str]:
    """The parts of the suite to run, in ``ALL``'s order: ``cells`` (comma-separated; ``all``:
    ``ALL``; empty: ``DEFAULT``) minus ``skip`` and the older ``--no-profile`` / ``--no-scaling``."""
    def names(text: str) -> set[str]:
        chosen = {c.strip() for c in text.split(",") if c.strip()}
        unknown = chosen - set(ALL) - {"all"}
        if unknown:
            raise ValueError(f"unknown cells {sorted(unknown)}; choose from {', '.join(ALL)}")
        return set(ALL) if "all" in chosen else chosen
    wanted = names(cells) or set(DEFAULT)
    wanted -= names(skip) | ({"profile"} if no_profile else set()) | ({"scaling"} if no_scaling else set())
    return [c for c in ALL if c in wanted]


def result_name(quick: bool, parts: list[str]) -> str | None:
    """The result file's name after its date: ``None`` for a full run (every default part, maybe
    more), ``quick`` for a quick one; a partial run adds its parts (``2026-11-26-small_batch.json``),
    so it never replaces a full run's file."""
    words = (["quick"] if quick else []) + ([] if set(parts) >= set(DEFAULT) else list(parts))
    return "-".join(words) or None


def partition_cell(bootstrap: str, partitions: int, records: int, max_offsets: int, rounds: int,
                   settle: Callable[[], dict], log: Callable[[str], None] = print,
                   broker_pids: tuple[int, ...] = ()) -> dict:
    """The throughput cell of ``partitions`` partitions (``CELL_CONFIGS``, no memory sampling)."""
    inp = throughput.prepare_input(bootstrap, records, CELL_SIZE, max_offsets, broker_pids=broker_pids,
                                   partitions=partitions)
    log(f"{partitions}p cell: {records:,} x {CELL_SIZE} B in {inp.produce_s} s; {rounds} rounds of {CELL_CONFIGS}")
    return throughput.suite(inp, rounds, settle, log, configs=CELL_CONFIGS, memory=())


def batch_figures(per_batch: list[dict]) -> dict:
    """One run's per-batch time: the median of each of ``BATCH_STAGES`` (ms) over the full batches
    after the first (a duration missing from a batch counts as 0), and how many batches that is. A
    batch is full with at least ``FULL_BATCH`` of the largest batch's rows: Spark's ``kafka`` source
    leaves a last batch of the remainder (16 rows), which is not a 4,000-record batch."""
    full = FULL_BATCH * max((b["rows"] for b in per_batch), default=0)
    timed = [b for b in per_batch[1:] if b["rows"] >= full] or per_batch[1:] or per_batch
    medians = key_medians([b["ms"] for b in timed], missing=0)
    return {**{k: medians.get(k, 0) for k in BATCH_STAGES}, "timed_batches": len(timed)}


def batch_summary(runs: dict[str, list[dict]]) -> dict:
    """Per configuration the summary of its runs' per-batch ms and the median of each stage; the
    per-round ratios spark_tuned ms / eos ms and eos ms / eos_alo ms."""
    figures = {name: [batch_figures(run["per_batch"]) for run in rs] for name, rs in runs.items()}
    ms = {name: [f["triggerExecution"] for f in fs] for name, fs in figures.items()}
    ratios = {}
    if "eos" in ms and "spark_tuned" in ms:
        ratios["spark_tuned_vs_eos"] = round_ratios(ms["spark_tuned"], ms["eos"])
    if "eos" in ms and "eos_alo" in ms:
        ratios["eos_vs_eos_alo"] = round_ratios(ms["eos"], ms["eos_alo"])
    for name in ("eos_ranges", "eos_tasks", "eos_ranges_tasks"):
        if name in ms and "spark_tuned" in ms:
            ratios[f"spark_tuned_vs_{name}"] = round_ratios(ms["spark_tuned"], ms[name])
    return {"batch_ms": {name: summary(v) for name, v in ms.items()},
            "stages_ms": {name: {k: round(statistics.median(f[k] for f in fs), 1) for k in BATCH_STAGES}
                          for name, fs in figures.items()},
            "per_run_ms": figures, "ratios_ms": ratios}


def small_batch(bootstrap: str, batches: int, rounds: int, settle: Callable[[], dict],
                log: Callable[[str], None] = print, broker_pids: tuple[int, ...] = (),
                max_offsets: int = SMALL_BATCH_OFFSETS) -> dict:
    """The ``small_batch`` cell: ``batches`` batches of ``max_offsets`` records, trigger 1 s."""
    records = batches * max_offsets
    inp = throughput.prepare_input(bootstrap, records, CELL_SIZE, max_offsets,
                                   warmup=SMALL_BATCH_WARMUP_BATCHES * max_offsets, broker_pids=broker_pids,
                                   partitions=SMALL_BATCH_PARTITIONS)
    log(f"small_batch: {records:,} x {CELL_SIZE} B, {SMALL_BATCH_PARTITIONS} partitions, batches of "
        f"{max_offsets:,}, trigger {SMALL_BATCH_TRIGGER_S:g} s; {rounds} rounds of {CELL_CONFIGS}")
    out = throughput.suite(inp, rounds, settle, log, configs=CELL_CONFIGS, trigger_s=SMALL_BATCH_TRIGGER_S,
                           memory=())
    return {**out, **batch_summary(out["runs"])}


def measure(bootstrap: str, wanted: list[str], records: int, max_offsets: int, rounds: int, small_batches: int,
            settle: Callable[[], dict], log: Callable[[str], None] = print,
            broker_pids: tuple[int, ...] = ()) -> dict:
    """The wanted cells of ``16p``, ``64p`` and ``small_batch``, keyed by name."""
    out: dict = {}
    for name in [c for c in ("16p", "64p") if c in wanted]:
        out[name] = partition_cell(bootstrap, int(name[:-1]), records, max_offsets, rounds, settle, log, broker_pids)
        log("\n".join(lines({name: out[name]})))
    if "small_batch" in wanted:
        out["small_batch"] = small_batch(bootstrap, small_batches, rounds, settle, log, broker_pids)
        log("\n".join(lines({"small_batch": out["small_batch"]})))
    return out


def _range(s: dict) -> str:
    return f"{s['median']:,} [{s['min']:,}-{s['max']:,}]{' NOISY' if s.get('noisy') else ''}"


def lines(cells: dict) -> list[str]:
    """The report's lines of the cells: figures per configuration, then the per-round ratios."""
    out = []
    for name, cell in cells.items():
        inp = cell["input"]
        head = f"{name} ({inp['partitions']} partitions, {inp['records']:,} x {inp['record_bytes']} B"
        if "batch_ms" in cell:
            out.append(f"{head}, batches of {inp['max_offsets_per_trigger']:,}, trigger {inp['trigger_s']:g} s) "
                       "ms per batch, median [min-max]: "
                       + ", ".join(f"{k} {_range(v)}" for k, v in cell["batch_ms"].items()))
            out.append(f"{name} where the batch goes (median ms): " + "; ".join(
                f"{k} " + ", ".join(f"{stage} {ms}" for stage, ms in stages.items())
                for k, stages in cell["stages_ms"].items()))
            ratios = cell["ratios_ms"]
        else:
            out.append(f"{head}) records/s, median [min-max]: "
                       + ", ".join(f"{k} {_range(v)}" for k, v in cell["records_per_s"].items()))
            ratios = cell["ratios"]
        out.append(f"{name} ratios (median of per-round [min-max]): "
                   + ", ".join(f"{k} {v['median']} [{v['min']}-{v['max']}]" for k, v in ratios.items()))
    return out
