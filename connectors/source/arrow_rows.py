"""Kafka messages -> one pyarrow RecordBatch, column by column (the read hot path).

Invariants:
- The batch has exactly the source schema's Arrow form (``arrow_schema``): key, value,
  topic, partition, offset, timestamp, timestampType[, headers]; rows keep the message order.
- ``timestampType`` uses the Java client's ids, as Spark's Kafka source does: 0 = CreateTime,
  1 = LogAppendTime (-1 when the broker gives none).
- No per-record Python loop: fields are pulled with C-level ``map`` over ``Message`` methods
  and binary columns are built from one joined buffer plus numpy offsets.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Sequence

import numpy as np
import pyarrow as pa
from confluent_kafka import Message

_TS_TYPE, _TS_VALUE = itemgetter(0), itemgetter(1)
_INT32_MAX = 2**31 - 1


def arrow_schema(spark_schema) -> pa.Schema:
    """The Arrow schema Spark expects for ``spark_schema`` (what its Python data source checks)."""
    from kafka_eos.connectors.spark_compat import arrow_schema as spark_arrow_schema
    return spark_arrow_schema(spark_schema)


def binary_column(values: list) -> pa.Array:
    """A binary array of ``values`` (bytes or None), built from one joined buffer."""
    n = len(values)
    valid = None
    null_count = 0
    if None in values:
        mask = np.fromiter((v is not None for v in values), dtype=np.bool_, count=n)
        null_count = n - int(mask.sum())
        valid = pa.py_buffer(np.packbits(mask, bitorder="little"))
        values = [b"" if v is None else v for v in values]
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _INT32_MAX:  # too big for one binary array: Spark's schema needs int32 offsets
        raise OverflowError("binary column over 2 GiB")
    return pa.Array.from_buffers(pa.binary(), n, [valid, pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(b"".join(values))], null_count=null_count)


def constant_string(text: str, n: int) -> pa.Array:
    raw = text.encode()
    offsets = np.arange(0, (n + 1) * len(raw), len(raw), dtype=np.int32) if raw else np.zeros(n + 1, np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets[: n + 1]), pa.py_buffer(raw * n)])


def to_record_batch(messages: Sequence[Message], topic: str, partition: int, schema: pa.Schema) -> pa.RecordBatch:
    """One RecordBatch of ``messages`` (all error-free, from ``topic``-``partition``)."""
    n = len(messages)
    stamps = list(map(Message.timestamp, messages))
    ts = np.fromiter(map(_TS_VALUE, stamps), dtype=np.int64, count=n) * 1000
    ts_type = np.fromiter(map(_TS_TYPE, stamps), dtype=np.int32, count=n) - 1
    columns = [
        binary_column(list(map(Message.key, messages))),
        binary_column(list(map(Message.value, messages))),
        constant_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(np.fromiter(map(Message.offset, messages), dtype=np.int64, count=n)),
        pa.Array.from_buffers(schema.field("timestamp").type, n, [None, pa.py_buffer(ts)]),
        pa.array(ts_type),
    ]
    if len(schema) > len(columns):
        columns.append(pa.array(list(map(Message.headers, messages)), type=schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def to_record_batches(messages: Sequence[Message], topic: str, partition: int, schema: pa.Schema) -> list[pa.RecordBatch]:
    """Like ``to_record_batch``, halving the slice when a binary column would exceed 2 GiB."""
    try:
        return [to_record_batch(messages, topic, partition, schema)]
    except OverflowError:
        if len(messages) < 2:
            raise
        half = len(messages) // 2
        return (to_record_batches(messages[:half], topic, partition, schema)
                + to_record_batches(messages[half:], topic, partition, schema))
