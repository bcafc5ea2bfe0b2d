"""emit=valueRefs: the references a source task puts in place of the values, and what the sink
reads back from them (the format, the source option, the reader's batches)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options
from kafka_eos.connectors.source.value_refs import ValueRef, ValueRefError, parse_refs, ref_column, with_value_refs

BASE = {"kafka.bootstrap.servers": "k1:9092", "subscribe": "orders"}


def _batch(topic: str, partition: int, offsets: list[int]) -> pa.RecordBatch:
    n = len(offsets)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([b"k%d" % o for o in offsets], pa.binary()),
        "value": pa.array([b"x" * 1000] * n, pa.binary()),
        "topic": pa.array([topic] * n, pa.string()), "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array(offsets, pa.int64())})


def test_a_reference_names_its_record_and_round_trips():
    column = ref_column("orders.eu", 7, np.array([0, 41, 2**40], dtype=np.int64), "k1:9092")
    assert parse_refs(column, "k1:9092") == [ValueRef("orders.eu", 7, 0), ValueRef("orders.eu", 7, 41),
                                             ValueRef("orders.eu", 7, 2**40)]
    assert all(len(raw) == 22 + len("orders.eu") for raw in column.to_pylist()), "no value bytes are carried"


def test_the_source_batches_keep_every_column_but_value():
    batch = _batch("orders", 2, [10, 11, 13])
    [out] = with_value_refs([batch], "k1:9092")
    assert out.schema == batch.schema and out.drop_columns(["value"]).equals(batch.drop_columns(["value"]))
    assert parse_refs(out.column("value"), "k1:9092") == [ValueRef("orders", 2, o) for o in (10, 11, 13)]


def test_a_value_that_is_not_a_reference_is_refused_naming_the_row():
    column = ref_column("orders", 0, np.array([1, 2], dtype=np.int64), "k1:9092")
    changed = pa.array([column[0].as_py(), b"a value the query made"], pa.binary())
    with pytest.raises(ValueRefError, match="row 1: its value is not a record reference.*unchanged"):
        parse_refs(changed, "k1:9092")
    with pytest.raises(ValueRefError, match="row 0: its value is not a record reference"):
        parse_refs(pa.array([column[0].as_py() + b"-x"], pa.binary()), "k1:9092")  # concat(value, '-x')
    with pytest.raises(ValueRefError, match="row 0: .*made on another cluster.*'k2:9092'"):
        parse_refs(column, "k2:9092")
    with pytest.raises(ValueRefError, match="row 0"):
        parse_refs(pa.array([None], pa.binary()), "k1:9092")


def test_emit_value_refs_is_a_streaming_option():
    assert parse_source_options({**BASE, "emit": "valuerefs"}, streaming=True).emit_value_refs
    plain = parse_source_options(BASE, streaming=True)
    assert not plain.emit_value_refs and not plain.emit_ranges
    with pytest.raises(SourceOptionError, match="emit=valueRefs is for streaming queries"):
        parse_source_options({**BASE, "emit": "valueRefs"}, streaming=False)
