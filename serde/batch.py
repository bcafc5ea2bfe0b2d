"""Per-RecordBatch functions for Spark's ``mapInArrow``: decode + route failures, DLQ rows, encode.

The runner's plan (one streaming query, one sink, one transaction per task):
    raw     = spark.readStream.format("kafka-eos")...load()
    decoded = raw.mapInArrow(decode_fn(serde, policy), <Spark form of decoded_schema(...)>)
    good    = decoded.where(f"{ERROR_COLUMN} IS NULL")   # dlq only; drop the two extra columns
    dlq     = decoded.where(f"{ERROR_COLUMN} IS NOT NULL").mapInArrow(dlq_fn(topic), <Spark form of DLQ_SCHEMA>)
    out     = <transform of good>.mapInArrow(encode_fn(sink_serde), ...) unionByName dlq  -> sink

Pure pyarrow (no pyspark import): the Spark forms of these schemas belong to the pipeline
(``kafka_eos.connectors.pipeline.row_schemas``).

Invariants:
- Decoding keeps every source column and the row order; only ``value`` changes type.
- With ``dlq`` two columns are added (``ERROR_COLUMN``, ``RAW_VALUE_COLUMN``); with ``fail`` and
  ``skip`` the schema is the source schema with the decoded ``value``.
"""
from __future__ import annotations

from typing import Callable, Iterator

import pyarrow as pa

from kafka_eos.serde.formats import OnDecodeError
from kafka_eos.serde.codecs import ValueDecoder, ValueEncoder, ValueSerde, decoder, encoder
from kafka_eos.serde.decode_errors import ERROR_COLUMN, RAW_VALUE_COLUMN, apply_policy, dlq_batch

Batches = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def decode_batch(batch: pa.RecordBatch, value_decoder: ValueDecoder,
                 policy: OnDecodeError) -> tuple[pa.RecordBatch, int]:
    """(decoded batch, rows skipped): ``value`` decoded, failures routed by ``policy``."""
    index = batch.schema.get_field_index("value")
    raw = batch.column(index)
    decoded, errors = value_decoder.decode(raw)
    return apply_policy(batch.set_column(index, "value", decoded), errors, raw, policy)


def decoded_schema(source: pa.Schema, value_type: pa.DataType, policy: OnDecodeError) -> pa.Schema:
    schema = source.set(source.get_field_index("value"), pa.field("value", value_type))
    if policy is OnDecodeError.DLQ:
        schema = schema.append(pa.field(ERROR_COLUMN, pa.string())).append(pa.field(RAW_VALUE_COLUMN, pa.binary()))
    return schema


def decode_fn(serde: ValueSerde, policy: OnDecodeError,
              on_skipped: Callable[[int], None] | None = None) -> Batches:
    """The ``mapInArrow`` function that decodes values (``on_skipped``: e.g. an accumulator's add)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        value_decoder = decoder(serde)
        for batch in batches:
            out, skipped = decode_batch(batch, value_decoder, policy)
            if skipped and on_skipped is not None:  # decode_errors logged which records
                on_skipped(skipped)
            yield out
    return run


def dlq_fn(dlq_topic: str) -> Batches:
    """The ``mapInArrow`` function turning failed rows (of a dlq-decoded batch) into DLQ sink rows."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield dlq_batch(batch, dlq_topic)
    return run


def encode_batch(batch: pa.RecordBatch, value_encoder: ValueEncoder, column: str = "value") -> pa.RecordBatch:
    index = batch.schema.get_field_index(column)
    return batch.set_column(index, column, value_encoder.encode(batch.column(index)))


def encode_fn(serde: ValueSerde, column: str = "value") -> Batches:
    """The ``mapInArrow`` function that encodes ``column`` to the sink format (binary)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        value_encoder = encoder(serde)
        for batch in batches:
            yield encode_batch(batch, value_encoder, column)
    return run

