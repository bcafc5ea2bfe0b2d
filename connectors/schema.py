"""Spark schemas of the kafka-eos source rows: records (the same columns as Spark's built-in Kafka
source) or, with ``emit=offsetRanges``, offset ranges (``RANGE_SCHEMA``). No pyarrow here: the
driver's Python processes that only plan or commit import this and need no Arrow."""
from __future__ import annotations

from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def source_schema(include_headers: bool = False) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


RANGE_SCHEMA = StructType([StructField("topic", StringType()), StructField("partition", IntegerType()),
                           StructField("fromOffset", LongType()), StructField("untilOffset", LongType()),
                           StructField("cluster", StringType())])


def is_range_schema(schema: StructType) -> bool:
    """Whether a sink's input is offset ranges (the names and types of ``RANGE_SCHEMA``, in order)."""
    return [(f.name, f.dataType) for f in schema.fields] == [(f.name, f.dataType) for f in RANGE_SCHEMA.fields]
