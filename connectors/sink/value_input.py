"""A sink task's input of ``emit=valueRefs`` rows: each ``value`` replaced by its record's value.

The query's rows reach the sink with every column as the query made it and ``value`` a reference
to a source record (``connectors.source.value_refs``); the task reads those records' values
itself, with the source's options (``source.*``: read_committed, the source's consumer settings
and failOnDataLoss) and hands ``KafkaWriter`` the same Arrow rows the records path would have
given it. Enforced here:
- the task's rows are held without their values (references, key and metadata only), then each
  referenced partition is read once over [first, last referenced offset] in a consumer of its own
  (``partition_reader.read_messages``), in row order, so the values are read while the rows are
  written, not all held at once;
- a reference whose offset the read does not return (deleted by retention or compaction since
  the source read it), or that comes before an offset already served in its partition (rows
  reordered between source and sink: the plan is not narrow), fails the task naming the record:
  no row is ever written with another value.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Iterator

import pyarrow as pa
from confluent_kafka import Message

from kafka_eos.connectors.source.arrow_rows import binary_column
from kafka_eos.connectors.source.options import SourceOptions
from kafka_eos.connectors.source.partition_reader import read_messages
from kafka_eos.connectors.source.value_refs import ValueRef, ValueRefError, parse_refs
from kafka_eos.offsets.ranges import OffsetRange

TP = tuple[str, int]


class _PartitionValues:
    """The values of one partition's referenced offsets, read forward once."""

    def __init__(self, messages: Iterator[list[Message]], count: int) -> None:
        self.messages, self.left = messages, count
        self.chunk: list[Message] = []
        self.at = 0
        self.last: Message | None = None

    def value_at(self, ref: ValueRef) -> bytes | None:
        last = self.last
        if last is not None and last.offset() == ref.offset:  # the same record referenced again
            return self._served(last)
        if last is not None and ref.offset < last.offset():  # type: ignore[operator]
            raise ValueRefError(f"record {ref.topic}-{ref.partition}@{ref.offset} reaches the sink after offset "
                                f"{last.offset()}: the query reordered the source's rows (a shuffle), so its values "
                                "cannot be read in one pass; read records (emit=records) for such a query")
        while True:
            message = self._next(ref)
            if message.offset() == ref.offset:
                self.last = message
                return self._served(message)
            if message.offset() > ref.offset:  # type: ignore[operator]
                raise self._missing(ref)

    def _served(self, message: Message) -> bytes | None:
        self.left -= 1
        if self.left == 0 and hasattr(self.messages, "close"):
            self.messages.close()  # the partition's consumer is closed once its last row is served
        return message.value()

    def _next(self, ref: ValueRef) -> Message:
        while self.at >= len(self.chunk):
            self.chunk, self.at = next(self.messages, []), 0
            if not self.chunk:
                raise self._missing(ref)
        self.at += 1
        return self.chunk[self.at - 1]

    @staticmethod
    def _missing(ref: ValueRef) -> ValueRefError:
        return ValueRefError(f"record {ref.topic}-{ref.partition}@{ref.offset} is no longer in Kafka (retention or "
                             "compaction deleted it after the source read it): the task fails rather than write "
                             "its row without its value; a retry reads the batch again")


def with_values(batches: Iterable[pa.RecordBatch], options: SourceOptions) -> Iterator[pa.RecordBatch]:
    """The task's rows, in order, each ``value`` the referenced record's value."""
    cluster = options.kafka_conf["bootstrap.servers"]
    held = [(b, parse_refs(b.column(b.schema.get_field_index("value")), cluster)) for b in batches if b.num_rows]
    counts: Counter[TP] = Counter((r.topic, r.partition) for _, refs in held for r in refs)
    spans: dict[TP, list[int]] = {}
    for _, refs in held:
        for r in refs:
            span = spans.setdefault((r.topic, r.partition), [r.offset, r.offset])
            span[0], span[1] = min(span[0], r.offset), max(span[1], r.offset)
    readers = {tp: _PartitionValues(read_messages([OffsetRange(tp[0], tp[1], lo, hi + 1)], options), counts[tp])
               for tp, (lo, hi) in spans.items()}
    try:
        for batch, refs in held:
            values = [readers[(r.topic, r.partition)].value_at(r) for r in refs]
            index = batch.schema.get_field_index("value")
            yield batch.set_column(index, batch.schema.field(index), binary_column(values))
    finally:
        for reader in readers.values():
            if hasattr(reader.messages, "close"):
                reader.messages.close()
