"""``PipelineConfig`` -> one streaming query: source, decode, transform, encode, DLQ, sink.

    raw      = readStream.format("kafka-eos")                       (source_options)
    decoded  = raw.mapInArrow(decode_fn)                             (on_decode_error policy)
    good     = decoded without failed rows -> key cast -> watermark  -> view ``source``
    result   = transform.sql, then steps -> sink columns -> value encoded to binary
    dlq      = decoded failed rows -> DLQ rows (original key/value + error headers)
    late     = raw rows behind the watermark -> late-topic rows (``late_records``; with late_topic)
    query    = (result unionByName dlq unionByName late).writeStream.format("kafka-eos")   (sink_options)

A pipeline that copies records as they are (``passes_through``) is ``raw`` with the source option
emit=offsetRanges: its rows are offset ranges and the sink, given the source's options as
``source.*``, reads and writes the records in one process per task. One whose transform only
projects, filters or routes without reading ``value`` (bytes in and out, one scan) may ask for
emit=valueRefs in ``source.options`` (``start`` asks the analyzed plan, ``value_refs_frame``, and
refuses what may not carry them): each row's value is a reference to its record and the sink, given
the source's options too, reads the values back; decode and encode (identities for bytes) are left
out. Otherwise, and for a replay (``recompute``), the values go through Spark.

Invariants:
- One source and one sink: output, DLQ and late rows of a batch are committed together, so the
  DLQ and the late topic are exactly-once too.
- The plan is a deterministic function of the batch's offset range: nothing here repartitions
  or adds a nondeterministic expression, and ``unionByName`` keeps its children's partitions in
  order (output partitions first, then DLQ partitions, then late partitions). A replayed batch therefore gives the same
  rows to the same sink partition index, which the sink relies on to re-write lost partitions.
  ``start`` refuses (``PipelineBuildError``) an exactly-once query whose transform adds what a
  replay may not reproduce (``connectors.plan_check``), unless ``transform.allow_nondeterministic``.
- With a DLQ or a late topic each batch's offset range is read and decoded once per branch, each
  branch its own scan named after it (``output``, ``dlq``, ``late``: Spark does not share a
  streaming subplan). All scans start at the same offsets (``pin_start``), and a fixed offset
  range read read_committed yields the same records every time, so each record lands in exactly
  one branch.
- Errors name the YAML key to fix; option maps (they hold revealed secrets) are never logged.
"""
from __future__ import annotations

import logging
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery
from pyspark.sql.types import (BinaryType, StructField,
                               StructType)

from kafka_eos import connectors
from kafka_eos.config.model import DataFormat, PipelineConfig
from kafka_eos.config.spark_option_table import sink_option, source_option
from kafka_eos.connectors.pipeline import drain, stop, worker_handoff
from kafka_eos.connectors.plan_check import value_refs_refusal
from kafka_eos.connectors.pipeline.late_records import late_frame
from kafka_eos.connectors.pipeline.transform_stage import (PipelineBuildError, check_columns,
                                                           check_replayable, transform, transform_input)
from kafka_eos.connectors.pipeline.row_schemas import decoded_spark_schema
from kafka_eos.connectors.pipeline.savepoint_floor import floor_dlq
from kafka_eos.connectors.pipeline.side_outputs import dlq_rows, side_rows
from kafka_eos.connectors.pipeline.serde_resolve import sink_key_serde, sink_serde, source_key_serde, source_serde
from kafka_eos.connectors.pipeline.spark_options import (sink_options, sink_select_exprs, source_options,
                                                         late_topic, routes_by_topic, trigger_kwargs,
                                                         uses_dlq)
from kafka_eos.connectors.sink import record_timestamp
from kafka_eos.connectors.source.start import pin_start
from kafka_eos.option_map import OptionMap
from kafka_eos.serde import batch
from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.formats import SCHEMA_FORMATS


# Value references only where source.options asks (emit: valueRefs): measured at 1 KB (bench.size_bytes,
# bench/README "Issue 68, 2026-12-03 (evening)") they take ~5 ms/MB off the JVM and add ~8 to the
# workers and ~2 to the broker (the sink's second read): no gain, and small batches wait for that read.
VALUE_REFS_BY_DEFAULT = False
log = logging.getLogger(__name__)


def scans_per_batch(cfg: PipelineConfig) -> int:
    """Source scans in the plan: one per branch (output, DLQ, late; see the invariants). Spark's
    offset log records one source per scan, and counts each scan's rows as input."""
    return 1 + int(uses_dlq(cfg)) + int(late_topic(cfg) is not None)


def passes_through(cfg: PipelineConfig) -> bool:
    """Whether the pipeline copies records as they are (bytes in and out, no transform, no side
    output, key to key, value to value, headers to headers or none): then the source hands the sink
    its offset ranges and each sink task reads and writes its records in one process
    (``emit=offsetRanges``), unless ``source.options`` sets ``emit`` itself."""
    s, t, k = cfg.source, cfg.transform, cfg.sink
    return (s.format is DataFormat.BYTES and s.key_format is DataFormat.BYTES and k.format is DataFormat.BYTES
            and k.key_format is DataFormat.BYTES
            and not t.sql and not t.steps and t.watermark is None and scans_per_batch(cfg) == 1
            and bool(k.topic) and not k.topic_column and k.key_column == "key" and k.value_column == "value"
            and k.headers_column == ("headers" if s.include_headers else None) and not k.partition_column
            and k.timestamp_column in (record_timestamp.DEFAULT, None)  # null: copyTimestamps=false (writer_options)
            and "emit" not in OptionMap({k: str(v) for k, v in s.options}))


def _emit_asked(cfg: PipelineConfig) -> str | None:
    """``source.options``' emit, lower case (None: not set)."""
    asked = OptionMap({k: str(v) for k, v in cfg.source.options}).get("emit")
    return asked.lower() if asked else None


def may_carry_value_refs(cfg: PipelineConfig) -> bool:
    """Whether the value bytes may stay out of Spark (``emit=valueRefs``, the sink reads them back):
    bytes in and out (no decode, no encode), one scan, no watermark, not a plain copy, and
    ``source.options`` sets emit: valueRefs (``VALUE_REFS_BY_DEFAULT``: or no emit). ``start`` then
    asks the plan (``plan_check.value_refs_refusal``)."""
    s, t, k = cfg.source, cfg.transform, cfg.sink
    asked = _emit_asked(cfg)
    return (s.format is DataFormat.BYTES and k.format is DataFormat.BYTES and scans_per_batch(cfg) == 1
            and s.key_format not in SCHEMA_FORMATS and k.key_format not in SCHEMA_FORMATS
            and t.watermark is None and not passes_through(cfg)
            and (asked == "valuerefs" or (asked is None and VALUE_REFS_BY_DEFAULT)))


def stream_source_options(cfg: PipelineConfig, extra: dict[str, str] | None = None,
                          value_refs: bool = False) -> dict[str, str]:
    """The source's options in the query (also the sink's ``source.*`` when it reads the ranges or
    the values); ``extra`` last (``recompute``: a replay, which reads records)."""
    options = {**source_options(cfg), **stop.source_options(cfg), **worker_handoff.source_options(cfg)}
    # emit=valueRefs only where chosen (``value_refs``): elsewhere the rows must carry the values
    options = {k: v for k, v in options.items() if not (k.lower() == "emit" and str(v).lower() == "valuerefs")}
    if cfg.checkpoint.location:  # where a source without admission control finds its start (legacy_reader)
        options[source_option("checkpointLocation").name] = cfg.checkpoint.location
    if scans_per_batch(cfg) > 1:
        options = pin_start(options)
    if passes_through(cfg) and not extra:
        options[source_option("emit").name] = "offsetRanges"
    if value_refs and not extra:
        options[source_option("emit").name] = "valueRefs"
    return {**options, **(extra or {})}


def read_source(spark: SparkSession, options: dict[str, str], scan: str | None = None) -> DataFrame:
    """A scan of the source with ``options`` (``stream_source_options``: one start for all scans),
    named ``scan`` in a plan of several (each records its name on its batch ends); the data source
    is registered (``build_frame``)."""
    named = {**options, source_option("scanName").name: scan} if scan else options
    return spark.readStream.format("kafka-eos").options(**named).load()


def decode(raw: DataFrame, cfg: PipelineConfig, serde: ValueSerde,
           on_skipped: Callable[[int], None] | None = None, key_serde: ValueSerde | None = None) -> DataFrame:
    """The source rows with ``value`` (and with ``key_serde`` ``key``) decoded (plus the error
    columns under ``dlq``)."""
    policy = cfg.errors.on_decode_error
    schema = decoded_spark_schema(serde, policy, cfg.source.include_headers, key_serde=key_serde)
    return raw.mapInArrow(batch.decode_fn(serde, policy, on_skipped, key_serde), schema)


def encode(df: DataFrame, cfg: PipelineConfig, serde: ValueSerde | None, key_serde: ValueSerde | None = None) -> DataFrame:
    """The sink columns (key, value[, topic][, headers][, partition][, timestamp]) with ``value`` (and
    with ``key_serde`` ``key``) encoded to binary."""
    check_columns(df, cfg)
    try:  # sink.timestamp_column: the records' CreateTime
        timestamp = record_timestamp.select_exprs(df.schema, cfg.sink.timestamp_column)
    except ValueError as exc:
        raise PipelineBuildError(str(exc)) from None
    selected = df.selectExpr(*sink_select_exprs(cfg), *timestamp)
    key_serde = key_serde if "key" in selected.columns else None
    binary = {"value"} | ({"key"} if key_serde is not None else set())
    schema = StructType([StructField(f.name, BinaryType(), True) if f.name in binary else f
                         for f in selected.schema.fields])
    encoded = selected if serde is None else selected.mapInArrow(batch.encode_fn(serde, key_serde=key_serde), schema)
    if routes_by_topic(cfg) and "key" in encoded.columns:
        encoded = encoded.withColumn("key", col("key").cast(BinaryType()))  # DLQ and late keys are binary
    return encoded


def build_frame(spark: SparkSession, cfg: PipelineConfig, on_skipped: Callable[[int], None] | None = None,
                source_extra: dict[str, str] | None = None, available_now: bool = False,
                value_refs: bool = False) -> DataFrame:
    """The whole pipeline as one streaming DataFrame in the sink's shape (``source_extra``: more
    source options; a copy then reads its records, and the frame is the records the sink writes;
    ``available_now``: the scans stop at the ends taken now where that is a drain, ``pipeline.drain``;
    ``value_refs``: the source's values are references, passed on without decode or encode)."""
    connectors.register(spark)  # once: Spark warns on each registration that replaces one
    worker_handoff.prepare(spark, cfg)  # what the workers cannot read of the checkpoint themselves
    value_refs = value_refs and may_carry_value_refs(cfg) and not source_extra
    options = stream_source_options(cfg, source_extra, value_refs)
    if available_now:
        options = drain.prepare(spark, options)
    several = scans_per_batch(cfg) > 1
    raw = read_source(spark, options, "output" if several else None)
    if passes_through(cfg):  # offset ranges: the sink reads the records (writer_options)
        return raw if not source_extra else raw.select(*[c for c in ("key", "value", "headers") if c in raw.columns])
    if value_refs:  # bytes in and out: decode and encode would copy the references as they are
        return encode(transform(spark, transform_input(raw, cfg), cfg), cfg, None)
    in_serde, out_serde = source_serde(cfg.source), sink_serde(cfg.sink)
    in_keys, out_keys = source_key_serde(cfg.source), sink_key_serde(cfg.sink)
    decoded = decode(raw, cfg, in_serde, on_skipped, in_keys)
    result = encode(transform(spark, transform_input(decoded, cfg), cfg), cfg, out_serde, out_keys)
    if uses_dlq(cfg):
        dlq_scan = decode(read_source(spark, options, "dlq"), cfg, in_serde, key_serde=in_keys)
        result = result.unionByName(side_rows(dlq_rows(floor_dlq(dlq_scan, cfg), cfg), result, cfg),
                                    allowMissingColumns=True)
    if late_topic(cfg) is not None:
        late = late_frame(read_source(spark, options, "late"), cfg, in_serde, in_keys)
        result = result.unionByName(side_rows(late, result, cfg), allowMissingColumns=True)
    return result


def writer_options(cfg: PipelineConfig, once: bool, value_refs: bool = False) -> dict[str, str]:
    """``sink_options`` plus the guarantee; ``once`` (availableNow) has no trigger interval;
    the source's options as ``source.*`` where the sink reads records (ranges, ``value_refs``)."""
    # batchLog off: the runner prints one richer line per batch (progress.py) instead
    guarantee, batch_log, interval = (sink_option(n) for n in ("guarantee", "batchLog", "trigger.interval.ms"))
    options = {**sink_options(cfg), **worker_handoff.sink_options(cfg), guarantee.name: guarantee.text(cfg.guarantee.value),
               batch_log.name: batch_log.text(False)}
    if once:
        options[interval.name] = interval.text(0)
    if passes_through(cfg) and cfg.sink.timestamp_column is None:  # a copy on the producer's clock
        options[sink_option("copyTimestamps").name] = sink_option("copyTimestamps").text(False)
    if passes_through(cfg) or value_refs:
        options.update({f"source.{k}": v for k, v in stream_source_options(cfg, value_refs=value_refs).items()})
    return options


def writer(df: DataFrame, cfg: PipelineConfig, once: bool = False, value_refs: bool = False) -> DataStreamWriter:
    trigger = drain.trigger() if drain.asked(cfg, once) else trigger_kwargs(cfg)
    name = cfg.name or "kafka-eos"
    return (df.writeStream.format("kafka-eos").queryName(name).outputMode("append")
            .options(**writer_options(cfg, once, value_refs)).trigger(**trigger))


def start(spark: SparkSession, cfg: PipelineConfig, once: bool = False,
          on_skipped: Callable[[int], None] | None = None) -> StreamingQuery:
    """Build, check (``check_replayable``) and start the pipeline's query (the caller waits for it);
    with the values left in Kafka where the plan allows it (``value_refs_frame``)."""
    available_now = drain.asked(cfg, once)
    frame = value_refs_frame(spark, cfg, available_now)
    value_refs = frame is not None
    if frame is None:
        frame = build_frame(spark, cfg, on_skipped, available_now=available_now)
    check_replayable(frame, cfg)
    return writer(frame, cfg, once, value_refs).start()


def value_refs_frame(spark: SparkSession, cfg: PipelineConfig, available_now: bool = False) -> DataFrame | None:
    """The pipeline's frame with value references (``may_carry_value_refs``), or None where its
    analyzed plan may not carry them (``plan_check.value_refs_refusal``, logged): then the values
    go through Spark, as they always did. Never another result: only where ``value`` reaches the
    output unchanged, in its source task and order."""
    asked = _emit_asked(cfg) == "valuerefs"
    if not may_carry_value_refs(cfg):
        if asked:
            raise PipelineBuildError("source.options.emit: valueRefs needs bytes in and out (source.format and "
                                     "sink.format), one scan (no DLQ, no late topic), no watermark "
                                     "and a transform; fix: remove it")
        return None
    frame = build_frame(spark, cfg, available_now=available_now, value_refs=True)
    refusal = value_refs_refusal(frame)
    if refusal and asked:
        raise PipelineBuildError(f"source.options.emit: valueRefs: the transform may not carry value references: "
                                 f"{refusal}; fix: remove emit, or hand value to the sink as it is and read nothing else "
                                 "of it")
    if refusal:
        log.info("kafka-eos: the record values go through Spark: %s", refusal)
        return None
    log.info("kafka-eos: the record values stay out of Spark (emit=valueRefs): the sink reads them back")
    return frame


