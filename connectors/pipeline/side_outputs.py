"""The side outputs of a pipeline's plan: the DLQ's rows, and how DLQ and late-topic rows join the
output (``unionByName``: one sink, one transaction per task).

Enforced here: a side output's record keeps its source record's timestamp (as a copy does), typed
as the output's; ``sink.timestamp_column: null`` keeps none (the producer's clock for every record).
"""
from __future__ import annotations

from typing import cast

from pyspark.sql import DataFrame
from pyspark.sql.functions import expr
from pyspark.sql.types import LongType

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.pipeline.row_schemas import dlq_spark_schema
from kafka_eos.connectors.sink import record_timestamp
from kafka_eos.serde import batch


def dlq_rows(decoded: DataFrame, cfg: PipelineConfig) -> DataFrame:
    """The DLQ's rows of the rows that failed to decode (``decode`` under ``dlq``)."""
    failed = decoded.where(f"{batch.ERROR_COLUMN} IS NOT NULL")
    # cast: a valid pipeline with on_decode_error dlq names its DLQ topic (rule errors.dlq_topic)
    return failed.mapInArrow(batch.dlq_fn(cast(str, cfg.errors.dlq_topic)), dlq_spark_schema())


def side_rows(side: DataFrame, result: DataFrame, cfg: PipelineConfig) -> DataFrame:
    """DLQ or late-topic rows as the output's union takes them: each keeps its source record's
    timestamp, typed as the output's (epoch ms where the output's is a long); none under
    ``sink.timestamp_column: null``."""
    if cfg.sink.timestamp_column is None:
        return side.drop(record_timestamp.TIMESTAMP)
    fields = {f.name: f.dataType for f in result.schema.fields}
    if isinstance(fields.get(record_timestamp.TIMESTAMP), LongType):
        return side.withColumn(record_timestamp.TIMESTAMP, expr(f"unix_millis({record_timestamp.TIMESTAMP})"))
    return side
