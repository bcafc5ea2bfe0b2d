"""The stages of ``bench.size_profile``: CPU seconds per MB of record values, per stage.

From a profiled kafka-eos run (``profile_hooks`` lines, every task of the timed batches, i.e. all
but the first batch with rows) and its processes' CPU per role (``bench.cpu``, same window):

  fetch: consume                 the source thread's CPU in ``Consumer.consume``
  fetch: messages -> Arrow       ``to_record_batches``
  fetch: other reader Python     the rest of the reader generator (consumer open, positions, close)
  hand-over: source -> JVM       the source worker while its generator is suspended: pyspark
                                 writing the Arrow batch to the JVM
  hand-over: JVM -> sink         the sink worker inside its input's ``next``: pyspark reading
                                 the JVM's Arrow batch
  JVM                            the driver JVM (local[2]: executors too): rows from the source's
                                 Arrow, the projection, rows into the sink's Arrow, scheduling
  sink: Arrow -> Python lists    ``KafkaWriter._columns`` (``to_pylist``)
  sink: write evidence           ``TaskEvidence.place`` (partitions, grouping, digests) + check
  sink: produce loop             ``_produce_batch`` minus the rows around it (one ``produce`` a record)
  sink: producer open, flush, pre-commit rest
  driver: commit                 the commit's thread on the driver's Python runner
  workers outside the stages     the Python workers' CPU minus every stage above (librdkafka's
                                 threads: fetch, produce, their sockets; pyspark's own loop)
  driver side, other             the driver's Python and runners minus the commit
  broker
The transform of the bench pipeline is a projection (``key``, ``value``) inside the JVM, and its
records are bytes: no encode stage runs (a format's serde would be in the sink's Python).
"""
from __future__ import annotations

STAGES = ("fetch: consume", "fetch: messages -> Arrow", "fetch: other reader Python", "hand-over: source -> JVM",
          "hand-over: JVM -> sink", "JVM", "sink: Arrow -> Python lists", "sink: write evidence",
          "sink: produce loop", "sink: producer open", "sink: flush", "sink: pre-commit rest", "driver: commit",
          "workers outside the stages", "driver side, other", "broker", "total")
ROLES = {"JVM": "driver_jvm", "broker": "broker"}


def _sum(lines: list[dict], key: str) -> float:
    return sum(line.get(key, 0.0) for line in lines)


def cpu_seconds(lines: list[dict], batches: set[int], cpu_per_m: dict, records: int) -> dict[str, float]:
    """CPU seconds per stage over ``batches`` (their ``records``), from the task lines and the roles'
    CPU per million records."""
    src = [x for x in lines if x["side"] == "source" and x.get("batch") in batches]
    snk = [x for x in lines if x["side"] == "sink" and x.get("batch") in batches]
    com = [x for x in lines if x["side"] == "commit" and x.get("batch") in batches]

    def c(rows: list[dict], stage: str) -> float:
        return _sum(rows, stage + "_cpu")

    role = {k.removesuffix("_s_per_m"): v * records / 1e6 for k, v in cpu_per_m.items() if k.endswith("_s_per_m")}
    s = {"fetch: consume": c(src, "source_consume"), "fetch: messages -> Arrow": c(src, "source_arrow")}
    s["fetch: other reader Python"] = c(src, "source_busy") - s["fetch: consume"] - s["fetch: messages -> Arrow"]
    s["hand-over: source -> JVM"] = c(src, "source_downstream")
    s["hand-over: JVM -> sink"] = c(snk, "sink_wait_input")
    s["JVM"] = role.get("driver_jvm", 0.0)
    s["sink: Arrow -> Python lists"] = c(snk, "sink_columns")
    s["sink: write evidence"] = c(snk, "sink_evidence") + c(snk, "sink_evidence_check")
    s["sink: producer open"] = c(snk, "sink_open")
    s["sink: produce loop"] = (c(snk, "sink_produce") - s["sink: Arrow -> Python lists"] - s["sink: producer open"]
                               - c(snk, "sink_evidence"))
    s["sink: flush"] = c(snk, "sink_flush")
    s["sink: pre-commit rest"] = c(snk, "sink_precommit") - s["sink: flush"] - c(snk, "sink_evidence_check")
    s["driver: commit"] = _sum(com, "commit_cpu_s")
    in_workers = sum(v for k, v in s.items() if k.startswith(("fetch", "hand-over", "sink")))
    s["workers outside the stages"] = role.get("workers", 0.0) - in_workers
    s["driver side, other"] = role.get("driver_python", 0.0) + role.get("driver_runners", 0.0) - s["driver: commit"]
    s["broker"] = role.get("broker", 0.0)
    s["total"] = role.get("total", 0.0)
    return s


def cpu_per_mb(lines: list[dict], result: dict, size: int) -> dict[str, float]:
    """``cpu_seconds`` of a profiled run's timed batches, per MB of record values."""
    timed = result["per_batch"][1:]
    records = sum(b["rows"] for b in timed)
    seconds = cpu_seconds(lines, {b["batch"] for b in timed}, result.get("cpu", {}), records)
    mb = records * size / 1e6
    return {k: round(v / mb, 5) for k, v in seconds.items()}


def roles_per_mb(cpu_per_m: dict, size: int) -> dict[str, float]:
    """A run's CPU per role (``bench.cpu``) per MB of record values."""
    return {k.removesuffix("_s_per_m"): round(v / size, 5) for k, v in cpu_per_m.items() if k.endswith("_s_per_m")}


def _cell(spread: dict | None, scale: float = 1000) -> str:
    if not spread:
        return "-"
    m, lo, hi = (round(spread[k] * scale, 2) for k in ("median", "min", "max"))
    return f"{m} [{lo}-{hi}]"


def table(sizes: dict) -> str:
    """CPU ms per MB per stage (rows) by record size (columns), then MB/s of each configuration."""
    keys = list(sizes)
    head = "| CPU ms per MB | " + " | ".join(f"{int(k):,} B" for k in keys) + " |"
    rows = [head, "|---|" + "---:|" * len(keys)]
    for stage in STAGES:
        rows.append(f"| kafka-eos: {stage} | " + " | ".join(
            _cell(sizes[k].get("eos", {}).get("stages_s_per_mb", {}).get(stage)) for k in keys) + " |")
    for name in ("spark_tuned", "ceiling", "perf_produce", "perf_consume"):
        for stage in sorted({s for k in keys for s in sizes[k].get(name, {}).get("stages_s_per_mb", {})}):
            rows.append(f"| {name}: {stage} | " + " | ".join(
                _cell(sizes[k].get(name, {}).get("stages_s_per_mb", {}).get(stage)) for k in keys) + " |")
    rows.append("| **MB/s** | " + " | ".join("" for _ in keys) + " |")
    for name in ("eos", "spark_tuned", "ceiling", "perf_produce", "perf_consume"):
        rows.append(f"| {name} | " + " | ".join(_cell(sizes[k].get(name, {}).get("mb_per_s"), 1) for k in keys) + " |")
    return "\n".join(rows)
