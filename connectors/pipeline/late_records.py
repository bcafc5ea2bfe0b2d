"""Late records to a side topic, in the batch's own transaction (``transform.watermark.late_topic``).

    late = raw scan -> original value kept -> decoded -> event time (watermark.expression)
           -> bound (``kafka_eos.config.late_records``: window end, session end or the time itself)
           -> mapInArrow(late_fn): rows whose bound <= the batch's late watermark -> late-topic rows
    query = output unionByName DLQ unionByName late  -> the one exactly-once sink

Invariants:
- The split is Spark's own: Spark drops an input row of the stateful operator when its bound is
  at or behind the operator's watermark for late events (``bound <= watermark``, microseconds).
  That watermark is read from the checkpoint's offset log: for batch N the ``batchWatermarkMs``
  of ``offsets/N-1`` (0 for batch 0), or of ``offsets/N`` when
  ``spark.sql.streaming.statefulOperator.allowMultiple`` is false, as Spark's watermark
  propagators do. The offset log is written before a batch runs and reused on its replay, so a
  replayed batch routes exactly the same rows.
- The main branch is untouched: Spark drops these rows there itself, so each source record
  reaches either the windows or the late topic, never both, never neither (records with a null
  event time count as late when a window drops them).
- A pipeline started from a savepoint drops the replayed rows the old query handled and judges
  the others with at least the savepoint's watermark (``savepoint_floor``).
- Rows are judged before the transform's own filters: a late record the transform's WHERE would
  also have removed still goes to the late topic.
- Late-topic rows carry the original key and value bytes, the record's headers (when the source
  reads headers), then ``kafka-eos.source.topic|partition|offset``, ``kafka-eos.event-time`` and
  ``kafka-eos.watermark`` (ISO-8601 UTC; empty event time when null).
"""
from __future__ import annotations

import functools
import json
from datetime import datetime, timezone
from typing import Callable, Iterator, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql.functions import col, expr

from kafka_eos import KafkaEosError
from kafka_eos.config.late_records import LateSpec, late_spec
from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.row_schemas import decoded_spark_schema, dlq_spark_schema
from kafka_eos.connectors.pipeline.savepoint_floor import floor_late, restored
from kafka_eos.serde import batch as serde_batch
from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.decode_errors import (DLQ_SCHEMA, ERROR_COLUMN, HEADER_TYPE, OFFSET_HEADER, PARTITION_HEADER,
                                           RAW_KEY_COLUMN, RAW_VALUE_COLUMN, TIME_TYPE, TOPIC_HEADER)
from kafka_eos.serde.formats import OnDecodeError

ORIGINAL_VALUE = "_eos_late_original"
ORIGINAL_KEY = "_eos_late_original_key"
ORIGINAL_TIME = "_eos_late_original_time"   # the source record's timestamp (the watermark column may replace it)
BOUND = "_eos_late_bound"
EVENT_TIME_HEADER = "kafka-eos.event-time"
WATERMARK_HEADER = "kafka-eos.watermark"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
ALLOW_MULTIPLE = "spark.sql.streaming.statefulOperator.allowMultiple"


class LateWatermarkError(KafkaEosError, RuntimeError):
    """The batch's late-events watermark cannot be read; the message names the file."""


def _quoted(text: str | None) -> str:
    if text is None:  # late_spec() sets every duration its window kind uses
        raise AttributeError("the late-records spec lacks a window duration; build it with late_spec()")
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def bound_expr(spec: LateSpec, column: str) -> str:
    """The SQL expression of a row's bound (a timestamp) under ``spec``."""
    c = "`" + column.replace("`", "``") + "`"
    if spec.kind == "tumbling":
        return f"window({c}, {_quoted(spec.size)}, {_quoted(spec.size)}, {_quoted(spec.start)}).end"
    if spec.kind == "sliding":  # the end of the row's latest window
        return (f"window({c}, {_quoted(spec.slide)}, {_quoted(spec.slide)}, {_quoted(spec.start)}).start"
                f" + CAST({_quoted(spec.size)} AS INTERVAL)")
    if spec.kind == "session":
        return f"{c} + CAST({_quoted(spec.size)} AS INTERVAL)"
    return c


def late_watermark_ms(checkpoint: str, batch_id: int, previous: bool = True) -> int:
    """The watermark Spark judges batch ``batch_id``'s input against (see the invariants)."""
    planned = batch_id - 1 if previous else batch_id
    if planned < 0:
        return 0
    entry = CheckpointReader(checkpoint).offsets(planned)
    if entry is None:
        raise LateWatermarkError(f"batch {batch_id}: the offset log entry {checkpoint}/offsets/{planned} is missing "
                                 "or unreadable, so late records cannot be told apart; restore the checkpoint")
    return int(json.loads(entry.metadata or "{}").get("batchWatermarkMs", 0))


@functools.lru_cache(maxsize=64)
def _cached_watermark_ms(checkpoint: str, batch_id: int, previous: bool) -> int:
    return late_watermark_ms(checkpoint, batch_id, previous)


def current_batch_id() -> int:
    from pyspark import TaskContext
    context = TaskContext.get()
    value = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    if value is None:
        raise LateWatermarkError("late records are routed inside a streaming micro-batch only (no batch id here)")
    return int(value)


def _iso(micros: int | None) -> str:
    if micros is None:
        return ""
    stamp = datetime.fromtimestamp(micros // 1_000_000, timezone.utc).replace(microsecond=micros % 1_000_000)
    return stamp.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _micros(array: pa.Array) -> pa.Array:
    return pc.cast(array.cast(pa.timestamp("us")) if pa.types.is_timestamp(array.type) else array, pa.int64())


def late_batch(batch: pa.RecordBatch, watermark_ms: int, topic: str, time_column: str,
               drops_null_time: bool) -> pa.RecordBatch:
    """The late-topic rows (``DLQ_SCHEMA``) of the rows of ``batch`` that are late at ``watermark_ms``."""
    bound = _micros(batch.column(BOUND))
    late = pc.less_equal(bound, pa.scalar(watermark_ms * 1000, pa.int64()))
    if drops_null_time:
        late = pc.or_kleene(late, pc.is_null(bound))
    rows = batch.filter(pc.fill_null(late, False))
    names = rows.schema.names
    times = _micros(rows.column(time_column)).to_pylist()
    originals = rows.column("headers").to_pylist() if "headers" in names else [None] * rows.num_rows
    where = zip(*(rows.column(c).to_pylist() for c in ("topic", "partition", "offset")), strict=True)
    watermark = _iso(watermark_ms * 1000).encode()
    headers = [[*(original or []),
                *({"key": k, "value": v} for k, v in ((TOPIC_HEADER, t.encode()), (PARTITION_HEADER, str(p).encode()),
                                                     (OFFSET_HEADER, str(o).encode()),
                                                     (EVENT_TIME_HEADER, _iso(time).encode()),
                                                     (WATERMARK_HEADER, watermark)))]
               for original, (t, p, o), time in zip(originals, where, times, strict=True)]
    return pa.RecordBatch.from_arrays(
        [rows.column("key").cast(pa.binary()), rows.column(ORIGINAL_VALUE).cast(pa.binary()),
         pa.array([topic] * rows.num_rows, pa.string()), pa.array(headers, HEADER_TYPE),
         rows.column(ORIGINAL_TIME).cast(TIME_TYPE)], schema=DLQ_SCHEMA)


def late_fn(checkpoint: str, previous: bool, topic: str, time_column: str, drops_null_time: bool,
            batch_id: Callable[[], int] = current_batch_id,
            watermark_ms: Callable[[str, int, bool], int] = _cached_watermark_ms, floor_ms: int = 0
            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function giving a batch's late-topic rows (judged with at least
    ``floor_ms``: a savepoint's watermark, ``savepoint_floor``)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            wm = max(watermark_ms(checkpoint, batch_id(), previous), floor_ms)
            yield late_batch(batch, wm, topic, time_column, drops_null_time)
    return run


def late_frame(raw: DataFrame, cfg: PipelineConfig, serde: ValueSerde, key_serde: ValueSerde | None = None) -> DataFrame:
    """The late-topic rows of a scan of the source (``raw``), for ``unionByName`` into the query;
    decoded as the main branch decodes (``key_serde``: keys too), written as they were read."""
    w = cfg.transform.watermark
    assert w is not None and w.late_topic and cfg.checkpoint.location
    spec = late_spec(cfg.transform.sql, w.column)
    include_headers = cfg.source.include_headers
    kept = (raw.withColumn(ORIGINAL_VALUE, col("value")).withColumn(ORIGINAL_KEY, col("key"))
            .withColumn(ORIGINAL_TIME, col("timestamp")))
    extra = ((ORIGINAL_VALUE, pa.binary()), (ORIGINAL_KEY, pa.binary()), (ORIGINAL_TIME, TIME_TYPE))
    schema = decoded_spark_schema(serde, OnDecodeError.DLQ, include_headers, extra=extra, key_serde=key_serde)
    decoded = kept.mapInArrow(serde_batch.decode_fn(serde, OnDecodeError.DLQ, key_serde=key_serde), schema)
    raw_columns = [RAW_VALUE_COLUMN] + ([RAW_KEY_COLUMN] if key_serde is not None else [])
    decoded = decoded.where(f"{ERROR_COLUMN} IS NULL").drop(ERROR_COLUMN, *raw_columns)  # left to the main branch
    if w.expression:
        decoded = decoded.withColumn(w.column, expr(w.expression))
    start = restored(cfg)
    decoded = floor_late(decoded, w.column, start)
    bounded = decoded.withColumn(BOUND, expr(bound_expr(spec, w.column)))
    columns: list[Column | str] = [col(ORIGINAL_KEY).alias("key"), ORIGINAL_VALUE, ORIGINAL_TIME, "topic",
                                   "partition", "offset", w.column, BOUND]
    columns += ["headers"] if include_headers else []
    # cast: given a default, conf.get returns a str (pyspark types it Optional)
    previous = cast(str, raw.sparkSession.conf.get(ALLOW_MULTIPLE, "true")).lower() != "false"
    function = late_fn(cfg.checkpoint.location, previous, w.late_topic, w.column, spec.drops_null_time,
                       floor_ms=start.watermark_ms if start is not None else 0)
    return bounded.select(*columns).mapInArrow(function, dlq_spark_schema())
