"""The first watermark of a restore of overlapping sliding windows (docs/savepoints.md, 'The first
watermark'): the new checkpoint's ``offsets/0`` written before its first start, so that Spark
judges the replayed rows with the savepoint's watermark W.

How Spark (4.0-4.3, read in each version's code and measured) takes a watermark: a batch's
eviction watermark is its own offset-log entry's ``batchWatermarkMs``; its late rows are judged
with the previous batch's (``PropagateWatermarkSimulator``, the default since
``statefulOperator.allowMultiple``; ``IncrementalExecution`` gets ``offsets/b-1``'s metadata),
and batch 0 has none, so its rows are judged with 0 whatever ``offsets/0`` says. A seed that is
the replay itself (``offsets/0`` ending at the savepoint's ends under W) therefore rebuilds
windows closed at W and emits them again at its end. So the seed is an EMPTY batch 0:

- ``offsets/0``: every scan's line ends at the rewind offsets, with the rewind offsets as its
  planned start (``offsets.model``: it reads nothing), and the metadata is Spark's own
  ``OffsetSeqMetadata(W, now, the session's SQL settings)``; written through Spark's
  ``OffsetSeqLog`` (``spark_compat``), create-only, before the replay query is built;
- Spark finds a planned, uncommitted batch 0 at the start, runs it (no rows, empty state,
  committed) and sets its watermark tracker to W; the replay [rewind, ends) is batch 1: its late
  rows are judged with W (a pair of a record and a window with end <= W is dropped), its eviction
  watermark is W (an empty batch 0 raises nothing); the batches after it go on as the old query
  would have.

Invariants:
- Only a restore whose NEW window overlaps (``WindowSpec.overlapping``) is seeded; tumbling
  windows need only the floor (``savepoint_floor``).
- The lines are one per scan in the order the builder adds them (output, DLQ, late: Spark lists
  a plan's sources in that order); a count that differs fails Spark's start, never silently.
- ``seed_only``: a checkpoint whose only planned batch is the seed still needs the replay query
  (a driver that died after the seed was written and before batch 1 was planned).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.pipeline import worker_handoff
from kafka_eos.connectors.pipeline.builder import scans_per_batch
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.savepoint_plan import window_of
from kafka_eos.connectors.pipeline.spark_options import late_topic, uses_dlq
from kafka_eos.offsets import model
from kafka_eos.offsets.rewind import SavepointRefused
from kafka_eos.txn.log.savepoints import RestoreStart

SEED_BATCH = 0


@dataclass(frozen=True)
class Seed:
    """The seed entry: its watermark and one source line per scan."""
    watermark_ms: int
    lines: tuple[str, ...]


def needed(cfg: PipelineConfig) -> bool:
    """Whether a restore of ``cfg`` is seeded: its window overlaps (see module)."""
    return window_of(cfg).overlapping


def scan_names(cfg: PipelineConfig) -> tuple[str | None, ...]:
    """The scans of ``cfg``'s plan in Spark's order (``builder.build_frame``'s names)."""
    if scans_per_batch(cfg) == 1:
        return (None,)
    return ("output", *(("dlq",) if uses_dlq(cfg) else ()), *(("late",) if late_topic(cfg) is not None else ()))


def plan_seed(cfg: PipelineConfig, start: RestoreStart) -> Seed:
    """The seed of ``cfg`` restored as ``start`` says: every scan's end and planned start at the
    rewind offsets (an empty batch), under the savepoint's watermark."""
    end = model.encode(start.rewind, start=start.rewind)
    return Seed(start.watermark_ms, tuple(json.dumps(model.with_scan(end, scan)) for scan in scan_names(cfg)))


def metadata_line(spark: Any, seed: Seed, now_ms: int | None = None) -> str:
    """Spark's metadata of the seed: its own ``OffsetSeqMetadata`` JSON; a setting Spark leaves
    null there (4.3 does for ``spark.sql.shuffle.partitions``) takes the session's value, or is
    left out (Spark then applies what it applies to an entry without it)."""
    data = spark_compat.offset_seq_metadata_json(spark, seed.watermark_ms, now_ms or int(time.time() * 1000))
    conf: dict[str, str] = {}
    for key, value in data.get("conf", {}).items():
        value = value if value is not None else spark.conf.get(key, None)
        if value is not None:
            conf[key] = str(value)
    return json.dumps({**data, "conf": conf}, separators=(",", ":"))


def write(spark: Any, cfg: PipelineConfig, start: RestoreStart) -> bool:
    """Write the seed into ``cfg``'s new checkpoint; False when its batch 0 exists (kept as it is:
    the seed written by an earlier start, or checked by ``seed_only``)."""
    if spark_compat.offset_log_format(spark) != "1":
        raise SavepointRefused(f"{spark_compat.OFFSET_LOG_FORMAT_CONF} is {spark_compat.offset_log_format(spark)}: "
                               "the first watermark of a sliding-window restore is written as an offset-log v1 "
                               f"entry; unset it for the restore (a new checkpoint), or use tumbling windows")
    seed = plan_seed(cfg, start)
    checkpoint = str(cfg.checkpoint.location).rstrip("/")
    worker_handoff.query_id(spark, checkpoint)  # Spark refuses an offset log without the metadata file
    return spark_compat.add_offset_seq(spark, f"{checkpoint}/offsets", SEED_BATCH, metadata_line(spark, seed),
                                       list(seed.lines))


def is_seed(cfg: PipelineConfig, start: RestoreStart, reader: CheckpointReader) -> bool:
    """Whether ``offsets/0`` of ``cfg``'s checkpoint is the seed of ``start`` (empty, under W)."""
    entry = reader.offsets(SEED_BATCH)
    if entry is None or not needed(cfg):
        return False
    try:
        watermark = int(json.loads(entry.metadata or "{}").get("batchWatermarkMs", -1))
        lines = [json.loads(line) for line in entry.sources]
    except ValueError:
        return False
    return watermark == start.watermark_ms and bool(lines) and all(
        model.decode(line) == start.rewind and model.planned_start(line) == start.rewind for line in lines)


def seed_only(cfg: PipelineConfig, start: RestoreStart, reader: CheckpointReader) -> bool:
    """Whether the seed is the only planned batch: the replay query is still to run (see module)."""
    return reader.offset_batches() == [SEED_BATCH] and is_seed(cfg, start, reader)
