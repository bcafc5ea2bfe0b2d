"""Spark schemas of the pipeline's ``mapInArrow`` stages (driver side; needs pyspark, not a JVM).

Each is the Arrow schema ``kafka_eos.serde.batch`` produces, as Spark sees it: the decoded
source rows (``decode_fn``) and the DLQ rows (``dlq_fn``).
"""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.spark_compat import arrow_schema
from kafka_eos.serde.batch import decoded_schema
from kafka_eos.serde.codecs import ValueSerde, decoder
from kafka_eos.serde.decode_errors import DLQ_SCHEMA
from kafka_eos.serde.formats import OnDecodeError


def decoded_spark_schema(serde: ValueSerde, policy: OnDecodeError, include_headers: bool = False,
                         extra: tuple[tuple[str, pa.DataType], ...] = (),
                         key_serde: ValueSerde | None = None) -> StructType:
    """The Spark schema ``decode_fn`` produces from the kafka-eos source's rows (plus ``extra``
    columns appended to them before decoding, which decoding keeps; ``key_serde``: keys decoded too)."""
    source = arrow_schema(source_schema(include_headers))
    for name, arrow_type in extra:
        source = source.append(pa.field(name, arrow_type))
    key_type = decoder(key_serde).arrow_type if key_serde is not None else None
    return from_arrow_schema(decoded_schema(source, decoder(serde).arrow_type, policy, key_type))


def dlq_spark_schema() -> StructType:
    """The Spark schema ``dlq_fn`` produces."""
    return from_arrow_schema(DLQ_SCHEMA)
