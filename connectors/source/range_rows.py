"""``emit=offsetRanges``: the source's rows are its offset ranges, and the kafka-eos sink reads them.

For a query that copies records without changing them, each record then moves through one
Python process: the sink task consumes its ranges and produces them into its transaction, and
Spark carries one row per range instead of every record. Enforced here:
- a task's rows are the non-empty ranges of its input partition, in the partition's order, so a
  replayed batch gives its sink partition the same ranges (and the same records);
- every row names the cluster it was planned on (the source's ``kafka.bootstrap.servers``);
  ``ranges_of`` refuses rows of another cluster than the sink's ``source.`` options name, and
  rows that are not this schema (a query that changed them between source and sink).
"""
from __future__ import annotations

from typing import Iterable, Iterator

import pyarrow as pa

from kafka_eos import KafkaEosError
from kafka_eos.offsets.ranges import OffsetRange

# the Arrow form of ``kafka_eos.connectors.schema.RANGE_SCHEMA``
ARROW_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("fromOffset", pa.int64()),
                          ("untilOffset", pa.int64()), ("cluster", pa.string())])


class RangeRowsError(KafkaEosError, ValueError):
    """Rows given to the sink as offset ranges that it must not read; the message names the fix."""


def range_batch(ranges: Iterable[OffsetRange], cluster: str) -> pa.RecordBatch:
    """One row per non-empty range, in order."""
    kept = [r for r in ranges if r.size > 0]
    return pa.RecordBatch.from_arrays(
        [pa.array([r.topic for r in kept], pa.string()), pa.array([r.partition for r in kept], pa.int32()),
         pa.array([r.start for r in kept], pa.int64()), pa.array([r.end for r in kept], pa.int64()),
         pa.array([cluster] * len(kept), pa.string())], schema=ARROW_SCHEMA)


def ranges_of(batches: Iterable[pa.RecordBatch], cluster: str) -> Iterator[OffsetRange]:
    """The ranges of a sink task's input rows, in order; ``RangeRowsError`` for rows of another cluster."""
    for batch in batches:
        if batch.schema.names != ARROW_SCHEMA.names:
            raise RangeRowsError(f"the sink's input is not the source's offset ranges (columns {batch.schema.names}); "
                                 "with emit=offsetRanges give the sink the source's rows unchanged")
        rows = batch.to_pydict()
        for topic, partition, start, end, planned_on in zip(rows["topic"], rows["partition"], rows["fromOffset"],
                                                            rows["untilOffset"], rows["cluster"], strict=True):
            if planned_on != cluster:
                raise RangeRowsError(
                    f"offset range {topic}-{partition} [{start}, {end}) was planned on the cluster {planned_on!r}, "
                    f"but the sink's option source.kafka.bootstrap.servers is {cluster!r}: give the sink the "
                    "source's options (each prefixed 'source.')")
            yield OffsetRange(topic, partition, start, end)
