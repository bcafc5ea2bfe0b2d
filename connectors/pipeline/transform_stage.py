"""The transform stage of a pipeline's plan: what its ``transform`` sees, the SQL and steps over
it, the check of the sink's columns, and the refusal of a plan a replay may not reproduce.

Enforced here: every analysis error of the transform is a ``PipelineBuildError`` naming the YAML
key to fix (``transform.sql``, ``transform.steps[n]``, ``transform.watermark.*``, ``sink.*_column``)
and the fix, before Spark's less specific errors; an exactly-once plan that adds what a replay may
not reproduce is refused (``check_replayable``) unless ``transform.allow_nondeterministic``.
"""
from __future__ import annotations

import functools
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col, expr
from pyspark.sql.types import BinaryType, ByteType, IntegerType, LongType, ShortType, StringType

from kafka_eos import KafkaEosError
from kafka_eos.config.model import DataFormat, PipelineConfig, Step
from kafka_eos.connectors.pipeline.savepoint_floor import floor_main
from kafka_eos.serde.formats import SCHEMA_FORMATS
from kafka_eos.connectors.pipeline.spark_options import uses_dlq
from kafka_eos.connectors.plan_check import NonDeterministicPlanError, check_deterministic
from kafka_eos.serde import batch

SOURCE_VIEW = "source"  # the transform's input, as its SQL names it


class PipelineBuildError(KafkaEosError, ValueError):
    """The pipeline cannot be turned into a query; the message names the YAML key and the fix."""


def transform_input(decoded: DataFrame, cfg: PipelineConfig) -> DataFrame:
    """What the transform sees as ``source``: decoded rows, key as string when asked, watermark."""
    df = decoded
    if uses_dlq(cfg):
        df = df.where(f"{batch.ERROR_COLUMN} IS NULL").drop(batch.ERROR_COLUMN, batch.RAW_VALUE_COLUMN,
                                                            batch.RAW_KEY_COLUMN)  # (no such column: a no-op)
    if cfg.source.key_format is DataFormat.STRING:
        df = df.withColumn("key", col("key").cast(StringType()))
    watermark = cfg.transform.watermark
    if watermark is not None:
        expression = watermark.expression
        if expression:
            df = _analysed(lambda: df.withColumn(watermark.column, expr(expression)),
                           "transform.watermark.expression", "name a timestamp column of source, e.g. value.created_at")
        df = _analysed(lambda: df.withWatermark(watermark.column, watermark.delay), "transform.watermark.column",
                       "name a timestamp column (or define it with transform.watermark.expression)")
    return floor_main(df, cfg)  # started from a savepoint: only rows of windows open at it (savepoint_floor)


def transform(spark: SparkSession, source: DataFrame, cfg: PipelineConfig) -> DataFrame:
    """``transform.sql`` over the view ``source``, then each step in order."""
    df, sql = source, cfg.transform.sql
    if sql:
        source.createOrReplaceTempView(SOURCE_VIEW)
        df = _analysed(lambda: spark.sql(sql), "transform.sql",
                       f"fix the query; it reads FROM {SOURCE_VIEW} with columns {source.columns}")
    for n, step in enumerate(cfg.transform.steps):
        where, current = f"transform.steps[{n}].{step.kind}", df
        fix = f"use columns of {current.columns}"
        df = _analysed(functools.partial(_step_frame, current, step), where, fix)
    return df


def _step_frame(df: DataFrame, step: Step) -> DataFrame:
    if step.kind == "filter":
        return df.where(step.exprs[0])
    if step.kind == "select":
        return df.selectExpr(*step.exprs)
    return df.withColumn("key", expr(step.exprs[0]))


def check_columns(df: DataFrame, cfg: PipelineConfig) -> None:
    """The transform's result has what ``sink`` names (before Spark's less specific errors)."""
    fields, s = {f.name: f.dataType for f in df.schema.fields}, cfg.sink
    wanted = [("sink.value_column", s.value_column), ("sink.key_column", s.key_column),
              ("sink.topic_column", s.topic_column), ("sink.headers_column", s.headers_column),
              ("sink.partition_column", s.partition_column)]
    for key, name in wanted:
        if name and name not in fields:
            raise PipelineBuildError(
                f"{key}: the transform gives no column {name!r} (it gives {sorted(fields)}); "
                f"fix: select an expression AS {name} in transform, or change {key}")
    if s.key_column and s.key_format not in SCHEMA_FORMATS and not isinstance(fields[s.key_column], (StringType, BinaryType)):
        raise PipelineBuildError(
            f"sink.key_column: column {s.key_column!r} is {fields[s.key_column].simpleString()}; "
            f"fix: CAST(... AS STRING) AS {s.key_column} in transform (Kafka keys are string or binary), "
            "or set sink.key_format (json, avro, protobuf) and sink.key_schema")
    if s.partition_column and not isinstance(fields[s.partition_column], (ByteType, ShortType, IntegerType, LongType)):
        raise PipelineBuildError(
            f"sink.partition_column: column {s.partition_column!r} is {fields[s.partition_column].simpleString()}; "
            f"fix: an integer expression AS {s.partition_column} in transform (a partition of the output topic)")


def check_replayable(frame: DataFrame, cfg: PipelineConfig) -> None:
    """``plan_check.check_deterministic`` for exactly-once, its refusal under the YAML key ``transform``."""
    if not cfg.exactly_once:
        return
    try:
        check_deterministic(frame, cfg.transform.allow_nondeterministic)
    except NonDeterministicPlanError as exc:
        raise PipelineBuildError(f"transform: {exc}\n    fix: change the transform as said, or set "
                                 "transform.allow_nondeterministic: true") from None


def _analysed(make: Callable[[], DataFrame], key: str, fix: str) -> DataFrame:
    from pyspark.errors import AnalysisException, ParseException
    try:
        return make()
    except (AnalysisException, ParseException) as exc:
        first = str(exc).strip().splitlines()[0]
        raise PipelineBuildError(f"{key}: {first}\n    fix: {fix}") from None
