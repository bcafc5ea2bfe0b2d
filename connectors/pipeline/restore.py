"""``kafka-eos run new.yaml --from-savepoint LOCATION``: a new checkpoint that goes on where a saved
pipeline stopped, every window open at the savepoint rebuilt over all its records (docs/savepoints.md).

    1. ``prepare``: refuse what cannot be carried (``savepoint_plan.check_restorable``, the
       subscription, the same checkpoint or transactional-id prefix, a checkpoint with batches),
       plan the rewind with the NEW window (``offsets.rewind.plan_rewind``), check that Kafka still
       holds the replay (``check_retention``, live), then write the restore record beside the new
       checkpoint (create-only: the floor every build of its query applies, ``savepoint_floor``)
    2. ``replay_first``: the first query reads [rewind offsets, savepoint ends) as ONE batch (no
       ``maxOffsetsPerTrigger``, ``availableNowTarget`` = the ends, processing-time trigger), then
       the no-data batch its watermark needs, and stops once a trigger plans nothing. A window
       that overlaps (sliding, size > slide) is first seeded (``watermark_seed``: an empty batch 0
       under the savepoint's watermark W, written before the query is built), so the replay is
       batch 1 and its rows are judged with W
    3. the pipeline's own query (``runner.run_query``) goes on from the savepoint's ends

Invariants:
- The old checkpoint and sink log are never written: the new pipeline has its own checkpoint and
  so its own sink log; its prefix must differ from the saved one (a derived prefix does).
- Step 2 runs only while the new checkpoint has no offset-log entry but the seed; once the replay
  batch is planned, its offsets are in the log and every restart replays exactly that batch
  (Spark's own recovery).
- A stateless restore has no replay: its first query starts at the savepoint's ends.
"""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable, Mapping

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import records_home
from kafka_eos.connectors.pipeline import builder, drain, watermark_seed
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.pipeline_shape import shape_of
from kafka_eos.connectors.pipeline.savepoint_floor import restored
from kafka_eos.connectors.pipeline.savepoint_plan import restore_plan, window_of
from kafka_eos.connectors.pipeline.spark_options import source_options
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.offsets.model import Offsets
from kafka_eos.offsets.rewind import SavepointRefused, check_retention
from kafka_eos.txn.log.savepoints import RestoreStart, Savepoint, encode_offsets, read_restore, read_savepoint, \
    write_restore

POLL_S = 0.2


def _refuse_mismatch(cfg: PipelineConfig, sp: Savepoint) -> None:
    checkpoint = str(cfg.checkpoint.location)
    if checkpoint.rstrip("/") == sp.checkpoint.rstrip("/"):
        raise SavepointRefused(f"checkpoint.location {checkpoint} is the saved checkpoint: a restore starts a NEW "
                               "checkpoint; give another checkpoint.location")
    if (cfg.sink.transactional_id_prefix or "") == sp.prefix:
        raise SavepointRefused(f"sink.transactional_id_prefix {sp.prefix!r} is the saved pipeline's: the new "
                               "checkpoint needs its own; remove the key (a prefix is derived from the new "
                               "checkpoint) or give another")
    if shape_of(cfg).subscription != sp.shape.get("subscription"):
        raise SavepointRefused("source.topics/pattern/assign differ from the saved pipeline's: the savepoint's "
                               "offsets are of its input; keep the subscription for the restore, change it after")
    batches = CheckpointReader(checkpoint).offset_batches()
    started = read_restore(records_home(cfg))
    if batches and (started is None or started.savepoint.rstrip("/") != sp.location.rstrip("/")):
        raise SavepointRefused(f"checkpoint {checkpoint} has batches ({batches[-1]} the newest) and was not started "
                               "from this savepoint: give a new checkpoint.location")


def retention_of(admin_conf: Mapping[str, str], topics: set[str], timeout_s: float) -> dict[str, int | None]:
    """Each topic's ``retention.ms`` (None: unreadable; only named in the refusal's text)."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    from kafka_eos.txn.cluster.broker_configs import admin_client
    resources = {t: ConfigResource(ResourceType.TOPIC, t) for t in topics}
    futures = admin_client(dict(admin_conf)).describe_configs(list(resources.values()), request_timeout=timeout_s)
    out: dict[str, int | None] = {}
    for topic, resource in resources.items():
        try:
            entry = futures[resource].result(timeout_s).get("retention.ms")
            out[topic] = int(entry.value) if entry is not None and entry.value is not None else None
        except Exception:  # noqa: BLE001 - the retention is only named in the message
            out[topic] = None
    return out


def check_replay_fits(cfg: PipelineConfig, rewind: Offsets, end: Offsets, timeout_s: float = 10.0) -> None:
    """``check_retention`` against the live brokers of the source."""
    if rewind == end:
        return
    parsed = parse_source_options(source_options(cfg), streaming=True)
    kafka = KafkaOffsets(parsed.admin_conf(), timeout_s)
    earliest = kafka.earliest(end.keys())
    check_retention(rewind, end, earliest, retention_of(parsed.admin_conf(), {t for t, _ in end}, timeout_s))


def plan_start(cfg: PipelineConfig, sp: Savepoint) -> RestoreStart:
    """The restore record of ``cfg`` from ``sp`` (refusals: step 1; reads only, no broker)."""
    _refuse_mismatch(cfg, sp)
    plan = restore_plan(sp, window_of(cfg))
    if plan.needs_watermark_seed:
        check_seedable()
    w0 = plan.floor.w0_ms if plan.floor else None
    return RestoreStart(sp.location, w0, sp.watermark_ms, dict(sp.end), dict(plan.offsets), plan.rewind_batch)


def check_seedable() -> None:
    """Refuse a restore needing the first watermark where this pyspark cannot take it
    (``spark_compat.watermark_seed_refusal``)."""
    from kafka_eos.connectors import spark_compat
    reason = spark_compat.watermark_seed_refusal()
    if reason is not None:
        raise SavepointRefused(f"a savepoint cannot carry sliding windows longer than their slide on this "
                               f"pyspark: {reason}. Keep the checkpoint unchanged, restore with tumbling windows, "
                               "or restore on a pyspark that takes it (docs/savepoints.md, 'The first watermark')")


def prepare(cfg: PipelineConfig, location: str, timeout_s: float = 10.0) -> RestoreStart:
    """Step 1 (see module); a checkpoint started from this savepoint already keeps its record."""
    checkpoint = str(cfg.checkpoint.location)
    existing = read_restore(records_home(cfg))
    if existing is not None:
        if existing.savepoint.rstrip("/") != location.rstrip("/"):
            raise SavepointRefused(f"checkpoint {checkpoint} was started from savepoint {existing.savepoint}, not "
                                   f"{location}: give a new checkpoint.location")
        return existing
    start = plan_start(cfg, read_savepoint(location))
    check_replay_fits(cfg, start.rewind, start.end, timeout_s)
    write_restore(records_home(cfg), start)
    return start


def first_config(cfg: PipelineConfig, start: RestoreStart) -> PipelineConfig:
    """``cfg`` for the first query: from the rewind offsets to the savepoint's ends, in one batch."""
    target = ("availableNowTarget", json.dumps(encode_offsets(start.end)))
    return replace(cfg, source=replace(cfg.source, starting_offsets=json.dumps(encode_offsets(start.rewind)),
                                       max_offsets_per_trigger=None, options=(*cfg.source.options, target)))


def needs_replay(cfg: PipelineConfig) -> RestoreStart | None:
    """The restore record when the first query (step 2) is still to run, else None."""
    start = restored(cfg)
    if start is None:
        return None
    reader = CheckpointReader(str(cfg.checkpoint.location))
    return start if not reader.offset_batches() or watermark_seed.seed_only(cfg, start, reader) else None


def replay_first(spark, cfg: PipelineConfig, start: RestoreStart, report: Callable[[Any], None]) -> int:
    """Step 2: run the first query to its end; the batches it ran. ``report(query)`` is called while
    it runs (the runner's progress reporter). A failed query raises as ``awaitTermination`` does."""
    if watermark_seed.needed(cfg):
        watermark_seed.write(spark, cfg, start)  # before the build: the workers' handoff reads it
    first = first_config(cfg, start)
    frame = builder.build_frame(spark, first)
    builder.check_replayable(frame, first)
    writer = (frame.writeStream.format("kafka-eos").queryName(f"{cfg.name or 'kafka-eos'}-replay")
              .outputMode("append").options(**builder.writer_options(first, True)).trigger(processingTime="0 seconds"))
    query: Any = writer.start()
    try:
        while not query.awaitTermination(POLL_S):
            report(query)
            if drain.drained(query) and _planned_committed(first):
                query.stop()
                break
    finally:
        report(query)
    error = query.exception()
    if error is not None:
        raise error
    return len(CheckpointReader(str(cfg.checkpoint.location)).commit_batches())


def _planned_committed(cfg: PipelineConfig) -> bool:
    reader = CheckpointReader(str(cfg.checkpoint.location))
    planned = reader.offset_batches()
    return bool(planned) and planned[-1] in set(reader.commit_batches())


def refuse_saved(cfg: PipelineConfig, redactor: Callable[[str], str]) -> None:
    """A checkpoint a savepoint was taken of writes nothing more: ``PipelineFailed`` (exit 5)."""
    from kafka_eos.connectors import exit_codes
    from kafka_eos.connectors.pipeline.runner import PipelineFailed
    from kafka_eos.connectors.pipeline.savepoint import SavepointTaken, check_no_savepoint
    try:
        check_no_savepoint(cfg)
    except SavepointTaken as exc:
        raise PipelineFailed(redactor(f"{cfg.origin}: {exc}"), exit_codes.of_error(exc)) from None


def replay_if_due(spark, cfg: PipelineConfig, report: Callable[[Any], None], redactor: Callable[[str], str]) -> None:
    """Step 2 when it is due (``needs_replay``); a failed replay is the run's ``PipelineFailed``."""
    from pyspark.errors import StreamingQueryException

    from kafka_eos.connectors import exit_codes
    from kafka_eos.connectors.pipeline.runner import PipelineFailed, error_summary
    start = needs_replay(cfg)
    if start is None:
        return
    try:
        replay_first(spark, cfg, start, report)
    except StreamingQueryException as exc:
        raise PipelineFailed(redactor(f"pipeline {cfg.name}: the replay from savepoint {start.savepoint} failed: "
                                      f"{error_summary(str(exc))}\nNothing of it was committed; a new run replays it "
                                      "again."), exit_codes.of_text(str(exc))) from None
