"""``emit=valueRefs``: the source's rows are its records, each ``value`` a reference to the record.

For a query that reads every column but ``value`` and hands ``value`` to the sink unchanged
(project, filter on key/headers/metadata, route), the value bytes need not cross into Spark's JVM
and back: the source task puts a reference in their place and the kafka-eos sink task, given the
source's options (``source.*``), reads the referenced records' values itself, read_committed
(``connectors.sink.value_input``). One format, written and read here:

    b"kEv1" | crc32 of the cluster (>u4) | partition (>i4) | offset (>i8) | topic length (>u2) | topic (UTF-8)

Enforced here:
- every row of a source batch gets the reference of its own record (topic, partition, offset
  columns of that row), whatever its value was (a null value is re-read as null);
- ``parse_refs`` refuses a value that is not a reference, or one made on another cluster than the
  sink's ``source.kafka.bootstrap.servers`` (a query that changed ``value``, or options of another
  source), naming the row and the fix.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterable, Iterator, NamedTuple

import numpy as np
import pyarrow as pa

from kafka_eos import KafkaEosError

MAGIC = b"kEv1"
_HEAD = struct.Struct(">4sIiqH")  # magic, cluster crc, partition, offset, topic length; the topic follows


class ValueRefError(KafkaEosError, ValueError):
    """A value given to the sink as a record reference that is not one of this source's; the
    message names the row and the fix."""


class ValueRef(NamedTuple):
    topic: str
    partition: int
    offset: int


def cluster_tag(cluster: str) -> int:
    return zlib.crc32(cluster.encode())


def ref_column(topic: str, partition: int, offsets: np.ndarray, cluster: str) -> pa.Array:
    """A binary column of the references of ``offsets`` of ``topic``-``partition`` (fixed width,
    built from one buffer: no per-record Python)."""
    name, n = topic.encode(), len(offsets)
    width = _HEAD.size + len(name)
    fields = [("magic", "S4"), ("cluster", ">u4"), ("partition", ">i4"), ("offset", ">i8"), ("length", ">u2")]
    rows = np.zeros(n, dtype=np.dtype(fields + ([("topic", f"V{len(name)}")] if name else [])))
    rows["magic"], rows["cluster"], rows["partition"], rows["offset"] = MAGIC, cluster_tag(cluster), partition, offsets
    rows["length"] = len(name)
    if name:
        rows["topic"] = np.frombuffer(name, dtype=f"V{len(name)}")[0]
    bounds = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(bounds), pa.py_buffer(rows.tobytes())])


def with_value_refs(batches: Iterable[pa.RecordBatch], cluster: str) -> Iterator[pa.RecordBatch]:
    """The source's record batches (one topic-partition each) with ``value`` replaced by references."""
    for batch in batches:
        if not batch.num_rows:
            yield batch
            continue
        topic = batch.column(batch.schema.get_field_index("topic"))[0].as_py()
        partition = batch.column(batch.schema.get_field_index("partition"))[0].as_py()
        offsets = batch.column(batch.schema.get_field_index("offset")).to_numpy()
        index = batch.schema.get_field_index("value")
        yield batch.set_column(index, batch.schema.field(index), ref_column(topic, partition, offsets, cluster))


def parse_refs(values: pa.Array, cluster: str) -> list[ValueRef]:
    """The references of a sink batch's ``value`` column, in row order."""
    tag = cluster_tag(cluster)
    refs = []
    for row, raw in enumerate(values.to_pylist()):
        if raw is None or len(raw) < _HEAD.size or raw[:4] != MAGIC or len(raw) != _HEAD.size + _HEAD.unpack_from(raw)[4]:
            raise ValueRefError(f"row {row}: its value is not a record reference of the source (emit=valueRefs): "
                                "the query changed 'value' between source and sink; hand the source's value to the "
                                "sink unchanged, or read records (emit=records) to change it")
        _, planned_on, partition, offset, _ = _HEAD.unpack_from(raw)
        if planned_on != tag:
            raise ValueRefError(f"row {row}: its record reference was made on another cluster than the sink's option "
                                f"source.kafka.bootstrap.servers ({cluster!r}): give the sink the source's options "
                                "(each prefixed 'source.')")
        refs.append(ValueRef(raw[_HEAD.size:].decode(), partition, offset))
    return refs
