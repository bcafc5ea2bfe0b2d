"""Where the time of one kafka-eos batch goes (issue 14.3): seconds per stage per million records.

One run per guarantee (exactly-once, then at-least-once for the gap) of the same pipeline as
``bench.throughput`` on ``kafka-eos-profiled`` (``bench/profile_hooks.py``). The profiled batch
is the first steady-state batch (the second batch with rows). Its task lines are summed:

  source: Kafka consume         ``Consumer.consume`` in the source tasks
  source: messages -> Arrow     ``to_record_batches``
  source: other Python          the rest of the reader generator's busy time (consumer open,
                                offset checks, close)
  Spark: Arrow hand-over        the sink's wait for input minus the source's busy time, task by
                                task (source worker -> JVM -> sink worker; a residual)
  sink: Arrow -> Python lists   ``KafkaWriter._columns`` (``to_pylist``)
  sink: produce loop            ``_produce_batch`` minus the above and the producer open
  sink: producer open           constructor + ``init_transactions`` + ``begin_transaction``
  sink: flush                   ``Producer.flush`` at pre-commit
  sink: pre-commit rest         the rest of ``_precommit`` (statistics, checks)
  driver: commit                ``commit`` of the batch (EndTxn per handle, sink log)

Task stages are summed over the batch's tasks (2 run at once on local[2]): they are task-seconds
per million records, not wall time; the commit is driver wall time. ``spark_ms`` keeps Spark's
own durations of the batch (``triggerExecution`` is its wall time).
"""
from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

from bench.method import key_medians
from bench.throughput import Input, spark_run

STAGES = ("source: Kafka consume", "source: messages -> Arrow", "source: other Python", "Spark: Arrow hand-over",
          "sink: Arrow -> Python lists", "sink: produce loop", "sink: producer open", "sink: flush",
          "sink: pre-commit rest", "driver: commit")


def read_lines(directory: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(directory.glob("*.jsonl")) for line in path.read_text().splitlines()]


def stage_seconds(lines: list[dict], batch: int) -> tuple[dict, int]:
    """Seconds per stage of ``batch`` (task stages summed over tasks) and the batch's records."""
    source = {line["partition"]: line for line in lines if line["side"] == "source" and line.get("batch") == batch}
    sink = [line for line in lines if line["side"] == "sink" and line.get("batch") == batch]
    commit = [line["commit_s"] for line in lines if line["side"] == "commit" and line.get("batch") == batch]
    g = lambda line, key: line.get(key, 0.0)  # noqa: E731
    s = dict.fromkeys(STAGES, 0.0)
    for line in source.values():
        s["source: Kafka consume"] += g(line, "source_consume")
        s["source: messages -> Arrow"] += g(line, "source_arrow")
        s["source: other Python"] += g(line, "source_busy") - g(line, "source_consume") - g(line, "source_arrow")
    for line in sink:
        upstream = source.get(line.get("partition"), {})
        s["Spark: Arrow hand-over"] += max(0.0, g(line, "sink_wait_input") - g(upstream, "source_busy"))
        s["sink: Arrow -> Python lists"] += g(line, "sink_columns")
        s["sink: produce loop"] += g(line, "sink_produce") - g(line, "sink_columns") - g(line, "sink_open")
        s["sink: producer open"] += g(line, "sink_open")
        s["sink: flush"] += g(line, "sink_flush")
        s["sink: pre-commit rest"] += g(line, "sink_precommit") - g(line, "sink_flush")
    s["driver: commit"] = sum(commit)
    return s, sum(line["records"] for line in sink)


def profile_run(inp: Input, guarantee: str) -> dict:
    """One profiled run; the table of its first steady-state batch."""
    with tempfile.TemporaryDirectory() as directory:
        result = spark_run(inp, "kafka-eos", "kafka-eos", guarantee, profile=directory)
        lines = read_lines(Path(directory))
    batches = [b for b in result["per_batch"] if b["rows"]]
    chosen = batches[1] if len(batches) > 1 else batches[0]
    seconds, records = stage_seconds(lines, chosen["batch"])
    per_million = {k: round(v / records * 1e6, 3) if records else None for k, v in seconds.items()}
    return {"guarantee": guarantee, "batch": chosen["batch"], "records": records, "steady": len(batches) > 1,
            "seconds": {k: round(v, 4) for k, v in seconds.items()}, "s_per_million": per_million,
            "spark_ms": chosen["ms"], "run_records_per_s": result["records_per_s"], "tasks": _tasks(lines, chosen),
            "sink_log": result.get("sink_log")}


def _tasks(lines: list[dict], chosen: dict) -> list[dict]:
    return [line for line in lines if line.get("batch") == chosen["batch"]]


TASK_STAGES = {"source": ("source_open", "source_consume", "source_arrow", "source_busy", "wall_s"),
               "sink": ("sink_wait_input", "sink_open", "sink_init_txn", "sink_columns", "sink_produce",
                        "sink_flush", "sink_precommit", "wall_s")}


def small_batch_medians(lines: list[dict], per_batch: list[dict]) -> dict:
    """Where the time of a small batch goes (the latency runs): per stage, the median over the
    tasks of the batches after the first two, in ms (tasks run at once, so this is per task, not
    summed); the driver's ``commit`` and Spark's own durations, median per batch."""
    late = [line for line in lines if line.get("batch", -1) > 1]
    out: dict = {side: {k: round(statistics.median(line[k] for line in rows) * 1000, 1)
                        for k in keys if (rows := [line for line in late if line["side"] == side and k in line])}
                 for side, keys in TASK_STAGES.items()}
    commits = [line["commit_s"] for line in late if line["side"] == "commit"]
    out["driver_commit_ms"] = round(statistics.median(commits) * 1000, 1) if commits else None
    out["spark_ms"] = key_medians([b["ms"] for b in per_batch if b["batch"] > 1], missing=0)
    return out


def suite(inp: Input) -> dict:
    eos = profile_run(inp, "exactly_once")
    alo = profile_run(inp, "at_least_once")
    gap = {k: round((eos["s_per_million"][k] or 0) - (alo["s_per_million"][k] or 0), 3) for k in STAGES}
    return {"exactly_once": eos, "at_least_once": alo, "gap_s_per_million": gap, "record_bytes": inp.size,
            "max_offsets_per_trigger": inp.max_offsets}


def table(profile: dict) -> str:
    """The Markdown table of ``profile`` (``suite``'s result) for bench/README.md."""
    eos, alo = profile["exactly_once"], profile["at_least_once"]
    rows = ["| stage | exactly-once s / M records | at-least-once s / M records | gap |", "|---|---:|---:|---:|"]
    for k in STAGES:
        rows.append(f"| {k} | {eos['s_per_million'][k]} | {alo['s_per_million'][k]} | {profile['gap_s_per_million'][k]} |")
    rows.append(f"| Spark batch wall (triggerExecution), ms | {eos['spark_ms']['triggerExecution']} "
                f"({eos['records']:,} records) | {alo['spark_ms']['triggerExecution']} ({alo['records']:,} records) | |")
    return "\n".join(rows)


def by_size(profile: dict | None) -> dict[str, dict]:
    """The stage profiles of a result keyed by record size: ``profile`` is that already, or (results
    before issue 27) the one profile of the first size."""
    if not profile:
        return {}
    if "exactly_once" in profile:
        return {str(profile["record_bytes"]): profile}
    return profile
