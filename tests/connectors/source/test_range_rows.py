"""emit=offsetRanges: the rows a source task hands the sink, and what the sink reads back from them."""
from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import StructType

from kafka_eos.connectors.schema import RANGE_SCHEMA, is_range_schema, source_schema
from kafka_eos.connectors.source.planning import KafkaInputPartition
from kafka_eos.connectors.source.range_rows import RangeRowsError, range_batch, ranges_of
from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
from kafka_eos.offsets.ranges import OffsetRange

RANGES = (OffsetRange("a", 0, 5, 9), OffsetRange("a", 1, 7, 7), OffsetRange("b", 3, 0, 2))


def test_a_tasks_ranges_come_back_in_order_without_the_empty_ones():
    batch = range_batch(RANGES, "k1:9092")
    assert batch.num_rows == 2
    assert list(ranges_of([batch], "k1:9092")) == [RANGES[0], RANGES[2]]


def test_rows_planned_on_another_cluster_are_refused_naming_the_range_and_the_fix():
    with pytest.raises(RangeRowsError, match=r"a-0 \[5, 9\) was planned on the cluster 'k1:9092'.*source\."):
        list(ranges_of([range_batch(RANGES, "k1:9092")], "k2:9092"))


def test_rows_a_query_changed_are_refused():
    changed = pa.record_batch({"topic": ["a"], "partition": pa.array([0], pa.int32())})
    with pytest.raises(RangeRowsError, match="not the source's offset ranges"):
        list(ranges_of([changed], "k1:9092"))


def test_the_sink_knows_range_input_by_its_schema():
    assert is_range_schema(RANGE_SCHEMA)
    assert not is_range_schema(source_schema())
    assert not is_range_schema(StructType(RANGE_SCHEMA.fields[:4]))


def test_the_stream_reader_emits_one_row_per_range():
    reader = KafkaStreamReader({"kafka.bootstrap.servers": "k1:9092", "subscribe": "a,b", "emit": "OFFSETRANGES"},
                               RANGE_SCHEMA)
    batches = list(reader.read(KafkaInputPartition(RANGES)))
    assert [b.to_pydict() for b in batches] == [range_batch(RANGES, "k1:9092").to_pydict()]
    assert sum(b.num_rows for b in reader.read(None)) == 0  # Spark's placeholder partition: no range
