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
- Decoding keeps every source column and the row order; only ``value`` (and a decoded ``key``)
  changes type.
- With ``dlq`` two columns are added (``ERROR_COLUMN``, ``RAW_VALUE_COLUMN``; ``RAW_KEY_COLUMN`` too
  where the key is decoded); with ``fail`` and ``skip`` the schema is the source schema with the
  decoded ``value`` (and ``key``).
"""
from __future__ import annotations

from typing import Callable, Iterator

import pyarrow as pa

from kafka_eos.serde.formats import OnDecodeError
from kafka_eos.serde.codecs import ValueDecoder, ValueEncoder, ValueSerde, decoder, encoder
from kafka_eos.serde.decode_errors import ERROR_COLUMN, RAW_KEY_COLUMN, RAW_VALUE_COLUMN, apply_policy, dlq_batch

Batches = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def decode_batch(batch: pa.RecordBatch, value_decoder: ValueDecoder, policy: OnDecodeError,
                 key_decoder: ValueDecoder | None = None) -> tuple[pa.RecordBatch, int]:
    """(decoded batch, rows skipped): ``value`` (and with ``key_decoder`` ``key``) decoded, failures
    routed by ``policy``; a row's error names the key or the value that failed (a null key stays null)."""
    index = batch.schema.get_field_index("value")
    raw = batch.column(index)
    decoded, errors = value_decoder.decode(raw)
    batch = batch.set_column(index, "value", decoded)
    if key_decoder is None:
        return apply_policy(batch, errors, raw, policy)
    key_index = batch.schema.get_field_index("key")
    raw_keys = batch.column(key_index)
    keys, key_errors = key_decoder.decode(raw_keys)
    errors = [_both(k, v) for k, v in zip(key_errors, errors, strict=True)]
    return apply_policy(batch.set_column(key_index, "key", keys), errors, raw, policy, raw_keys)


def _both(key_error: str | None, value_error: str | None) -> str | None:
    if key_error is None:
        return value_error
    return f"key: {key_error}" + (f"; value: {value_error}" if value_error else "")


def decoded_schema(source: pa.Schema, value_type: pa.DataType, policy: OnDecodeError,
                   key_type: pa.DataType | None = None) -> pa.Schema:
    schema = source.set(source.get_field_index("value"), pa.field("value", value_type))
    if key_type is not None:
        schema = schema.set(schema.get_field_index("key"), pa.field("key", key_type))
    if policy is OnDecodeError.DLQ:
        schema = schema.append(pa.field(ERROR_COLUMN, pa.string())).append(pa.field(RAW_VALUE_COLUMN, pa.binary()))
        if key_type is not None:
            schema = schema.append(pa.field(RAW_KEY_COLUMN, pa.binary()))
    return schema


def decode_fn(serde: ValueSerde, policy: OnDecodeError, on_skipped: Callable[[int], None] | None = None,
              key_serde: ValueSerde | None = None) -> Batches:
    """The ``mapInArrow`` function that decodes values, and keys with ``key_serde`` (``on_skipped``:
    e.g. an accumulator's add)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        value_decoder = decoder(serde)
        key_decoder = decoder(key_serde) if key_serde is not None else None
        for batch in batches:
            out, skipped = decode_batch(batch, value_decoder, policy, key_decoder)
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


def encode_fn(serde: ValueSerde, column: str = "value", key_serde: ValueSerde | None = None) -> Batches:
    """The ``mapInArrow`` function that encodes ``column`` to the sink format (binary), and with
    ``key_serde`` the ``key`` column to the key's."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        value_encoder = encoder(serde)
        key_encoder = encoder(key_serde) if key_serde is not None else None
        for batch in batches:
            if key_encoder is not None:
                batch = encode_batch(batch, key_encoder, "key")
            yield encode_batch(batch, value_encoder, column)
    return run

