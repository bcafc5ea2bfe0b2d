"""``verify --recompute``: the pipeline's batches re-run over their recorded input, as record sets.

    1. a scratch checkpoint (a new local directory): the recorded checkpoint's ``metadata``, batch
       A-1's offsets and commit, batch A's offsets, and ``state/``, copied (``_scratch``); when a
       batch of A-1..B is older than Spark's offset log, from a recorded view instead
       (``recorded_view``: the offset-log files the sink log kept), for a plan without state;
    2. the pipeline's own frame (``builder.build_frame``, from the YAML), its source replaying the
       recorded offset log (``source.replay``), into ``foreachBatch``: each batch's rows as the sink
       would write them, bucketed per output topic and partition (``output_sets``);
    3. it runs until batch B is done, or stops at the first error, whose first line is the reason
       the batches left were not recomputed; the scratch checkpoint is then removed.

Invariants:
- The recorded checkpoint is read, never written: Spark restarts from the copy, reruns batch A
  with the offsets and metadata (watermark, SQL settings) it was planned with, and each later
  batch with its recorded offsets; so a windowed plan evicts and emits as the recorded run did,
  from the state the recorded run kept after batch A-1.
- Batches Spark's offset log no longer holds (it keeps ``spark.sql.streaming.minBatchesToRetain``)
  are re-run from the sink log's record of their input; a plan with state whose state before A
  Spark no longer keeps has it rebuilt first, by the replay a savepoint restore runs
  (``recompute_rewind``: its output discarded). A batch that cannot be (a record written before
  inputs were kept, event-time records that do not prove the rewind, overlapping sliding windows)
  is reported as not recomputed, with the reason; the replay starts after it.
- The frame of a YAML pipeline is built on the scratch checkpoint (``recompute_rewind.scratch_config``):
  its late branch reads the watermarks Spark applies there, its floor is the scratch's restore
  record (the recorded checkpoint's own, or the rebuilding replay's).
"""
from __future__ import annotations

import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.spark_option_table import source_option
from kafka_eos.connectors.operate import recorded_view
from kafka_eos.connectors.operate.recompute_rewind import DeepReplay, StatePlan, check_watermark, plan_floor, \
    reason as refusal, scratch_config, write as write_deep
from kafka_eos.connectors.pipeline import checkpoint_files
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, source_offsets
from kafka_eos.connectors.operate.output_sets import SETS_SCHEMA, Buckets, merge_rows, sets_fn
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.source.replay import ReplaySpec
from kafka_eos.txn.audit.output_scan import compacted_topics
from kafka_eos.offsets.rewind import SavepointRefused
from kafka_eos.txn.log.savepoints import write_restore
from kafka_eos.txn.protocol.sink_config import SinkConfig

IDLE_LIMIT_S = 300.0  # no batch done for this long: the replay is taken as stuck
POLL_S = 0.5


@dataclass
class Recomputed:
    sets: dict[int, Buckets] = field(default_factory=dict)   # batch -> bucket -> records
    missing: dict[int, str] = field(default_factory=dict)    # batch -> why it was not recomputed
    compacted_inputs: set[str] = field(default_factory=set)  # input topics with cleanup.policy=compact


def _copy(spark: Any, source: str, target: str) -> bool:
    """Copy a file or directory tree through Hadoop's file systems (local or remote); False if absent."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(source)
    fs = path.getFileSystem(conf)
    if not fs.exists(path):
        return False
    into = jvm.org.apache.hadoop.fs.Path(target)
    return bool(jvm.org.apache.hadoop.fs.FileUtil.copy(fs, path, into.getFileSystem(conf), into, False, conf))


def _scratch(spark: Any, recorded: str, first: int, scratch: str) -> None:
    """Step 1: the copy Spark restarts from (batch ``first`` rerun, its state before it)."""
    for name in ["metadata", f"offsets/{first}", "state"] + ([f"offsets/{first - 1}", f"commits/{first - 1}"]
                                                             if first > 0 else []):
        _copy(spark, f"{recorded}/{name}", f"{scratch}/{name}")


def output_counts(conf: dict[str, str], timeout_s: float = 10.0) -> dict[str, int]:
    """Every topic's partition count, as the sink's producer sees the cluster."""
    from kafka_eos.txn.cluster.broker_configs import admin_client
    metadata = admin_client(conf).list_topics(timeout=timeout_s)
    return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}


def input_topics(recorded: str, batch: int) -> list[str]:
    """The topics batch ``batch`` of the recorded offset log read."""
    entry = CheckpointReader(recorded).offsets(batch)
    topics = {t for line in (entry.sources if entry else ()) if isinstance(found := source_offsets(line), dict)
              for t in found}
    return sorted(topics)


def recompute(spark: Any, cfg: PipelineConfig, batches: list[int],
              progress: Callable[[str], None] = lambda line: None) -> Recomputed:
    """``replay_batches`` of the pipeline: its own frame (``builder.build_frame``) from the YAML."""
    from kafka_eos.connectors.pipeline.builder import build_frame
    recorded = (cfg.checkpoint.location or "").rstrip("/")
    if not recorded:
        return Recomputed(missing={b: "the pipeline names no checkpoint.location" for b in batches})
    if getattr(spark, "_jsc", None) is not None:
        checkpoint_files.use_session(spark)  # the restore record at a URI: read through the session's Hadoop
    return replay_batches(spark, lambda extra, scratch: build_frame(spark, scratch_config(cfg, scratch),
                                                                    source_extra=extra),
                          recorded, sink_config(sink_options(cfg)), batches, progress, cfg.name or "kafka-eos",
                          cfg.source.kafka.client_conf(), StatePlan.of(cfg))


def replay_batches(spark: Any, frame_of: Callable[[dict[str, str], str], Any], recorded: str, config: SinkConfig,
                   batches: list[int], progress: Callable[[str], None] = lambda line: None,
                   name: str = "kafka-eos", input_conf: Mapping[str, str] | None = None,
                   state: StatePlan | None = None) -> Recomputed:
    """Steps 1-3 for the committed ``batches`` (ids in the run recorded at ``recorded``);
    ``frame_of(source options, scratch checkpoint)`` is the query's frame in the sink's shape, its
    source given those options on top of its own; ``input_conf``, the source cluster's client
    settings, finds the compacted input topics (``Recomputed.compacted_inputs``); ``state``, the
    pipeline's window, lets a replay rebuild state Spark no longer keeps (``recompute_rewind``)."""
    recorded = recorded.rstrip("/")
    if getattr(spark, "_jsc", None) is None:
        return Recomputed(missing={b: "the re-run needs a classic SparkSession (this one is a Spark Connect client)"
                                   for b in batches})
    checkpoint_files.use_session(spark)  # the recorded checkpoint at a URI: read through the session's Hadoop
    plan = recorded_view.plan(recorded, config.log_location, batches)
    done = Recomputed(missing=dict(plan.missing))
    first, last = plan.first, plan.through
    if first is None:
        return done
    scratch = tempfile.mkdtemp(prefix="kafka-eos-recompute-")
    view = tempfile.mkdtemp(prefix="kafka-eos-recorded-") if plan.needs_view else ""
    try:
        try:
            deep = _prepare(spark, recorded, plan, state, scratch, view)
        except FileNotFoundError as error:  # Spark removed a batch while it was read: none re-run
            return _left(done, batches, str(error))
        except SavepointRefused as refused:  # the state before the first batch cannot be rebuilt
            return _left(done, batches, f"the plan keeps state, Spark no longer keeps it before batch "
                                        f"{plan.first}, and the replay that rebuilds it cannot run: "
                                        f"{refusal(refused)}")
        if plan.from_sink_log:
            progress(f"batches {min(plan.from_sink_log)}-{max(plan.from_sink_log)}: Spark's offset log no longer "
                     "holds them; their input is the sink log's record")
        if deep is not None:
            progress(f"batch {first}: Spark no longer keeps the state before it; replayed from batch "
                     f"{deep.floor.rewind_batch} with the floor at {deep.floor.w0_ms} ms (watermark "
                     f"{deep.floor.watermark_ms} ms{', first in a seeded batch' if deep.seeded else ''})")
        source = view or recorded
        to_scratch, to_recorded = (deep.scratch, deep.recorded) if deep else (_same, _same)
        if input_conf:
            done.compacted_inputs = compacted_topics(input_conf, input_topics(source, to_scratch(last)), progress)
        partitioner = config.producer_settings("verify").get("partitioner", "consistent_random")
        counts = output_counts(config.client_conf())
        replay = ReplaySpec(source, scratch, to_scratch(last))
        finished, stopped = threading.Event(), []

        def collect(df: Any, batch_id: int) -> None:
            b = to_recorded(batch_id)
            if deep is not None and batch_id > deep.replay_batch and (wrong := check_watermark(scratch, view, batch_id)):
                stopped.append(f"batch {b}: {wrong}")
                finished.set()
                return
            rows = df.mapInArrow(sets_fn(config.topic, counts, str(partitioner)), SETS_SCHEMA).collect()
            if deep is not None and batch_id <= deep.replay_batch:  # the seed, the replay: output not compared
                if batch_id == deep.replay_batch:
                    progress(f"the state before batch {first} rebuilt")
                return
            done.sets[b] = merge_rows(rows)
            progress(f"recomputed batch {b}: {sum(s.records for s in done.sets[b].values()):,} records")
            if b >= last:
                finished.set()

        frame = frame_of({source_option("replayOffsetLog").name: replay.text()}, scratch)
        query = (frame.writeStream.foreachBatch(collect).queryName(f"kafka-eos-recompute-{name}")
                 .option("checkpointLocation", scratch).trigger(processingTime="0 seconds").start())
        reason = _wait(query, finished, done)
        reason = stopped[0] if stopped else reason
    finally:
        for directory in (scratch, view):
            if directory:
                shutil.rmtree(directory, ignore_errors=True)
    return _left(done, batches, reason)


def _prepare(spark: Any, recorded: str, plan: recorded_view.ViewPlan, state: StatePlan | None, scratch: str,
             view: str) -> DeepReplay | None:
    """Step 1: the view and the scratch checkpoint; the rebuilding replay's numbering when ``plan.deep``."""
    assert plan.first is not None
    if plan.deep:
        texts = recorded_view.entries(recorded, plan)
        deep = plan_floor(recorded, plan.sink_log, state, plan.first, texts[plan.first - 1])
        metadata = checkpoint_files.open_reader(recorded).read("metadata") or ""
        write_deep(deep, texts, metadata, view, scratch)
        if deep.seeded and state is not None:
            state.seed(spark, scratch, deep.floor)
        return deep
    if view:
        recorded_view.build(recorded, plan, view)
    _scratch(spark, view or recorded, plan.first, scratch)
    if state is not None and state.restored is not None:  # the recorded run's own floor
        write_restore(scratch, state.restored)
    return None


def _same(batch: int) -> int:
    return batch


def _left(done: Recomputed, batches: list[int], reason: str) -> Recomputed:
    """``done`` with every batch neither recomputed nor already missing named missing for ``reason``."""
    for b in batches:
        if b not in done.sets and b not in done.missing:
            done.missing[b] = reason or f"the replay did not reach batch {b}"
    return done


def _wait(query: Any, finished: threading.Event, done: Recomputed) -> str:
    """Step 3: until the last batch is done; the reason it stopped early, if it did."""
    seen, since = -1, time.monotonic()
    try:
        while not finished.wait(POLL_S):
            if not query.isActive:
                error = query.exception()
                return "the re-run failed: " + (str(error).strip().splitlines()[0] if error else "it stopped")
            if len(done.sets) != seen:
                seen, since = len(done.sets), time.monotonic()
            elif time.monotonic() - since > IDLE_LIMIT_S:
                return f"the re-run planned no batch for {IDLE_LIMIT_S:.0f} s"
        return ""
    finally:
        query.stop()


def recompute_locally(cfg: PipelineConfig, batches: list[int], progress: Callable[[str], None] = lambda line: None,
                      master: str = "local[*]") -> Recomputed:
    """``recompute`` in a new local SparkSession of this process, quiet as ``kafka-eos run``'s."""
    from kafka_eos.connectors.pipeline.compiled_pyspark import set_spark_home
    from kafka_eos.connectors.pipeline.console import console_conf, quiet_environment
    from kafka_eos.connectors.pipeline.driver_archive import for_local_driver
    from kafka_eos.connectors.pipeline.runner import RUN_CONF
    from kafka_eos.connectors.spark_harness import local_session
    quiet_environment(master, False)
    set_spark_home()
    with for_local_driver():
        spark = local_session(master, app=f"kafka-eos verify {cfg.name}", conf={**RUN_CONF, **console_conf(False)})
        try:
            return recompute(spark, cfg, batches, progress)
        finally:
            spark.stop()
