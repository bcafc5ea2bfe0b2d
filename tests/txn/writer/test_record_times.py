"""record_times: a row's timestamp column as the record's CreateTime in epoch ms (pure)."""
from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest

from kafka_eos.txn.writer.record_times import TimestampError, epoch_ms, stamped, timestamps_of
from kafka_eos.txn.writer.records import Records

AT = datetime(2026, 12, 3, 21, 0, 0, 123456, tzinfo=timezone.utc)
AT_MS = 1_796_331_600_123


def test_spark_timestamps_of_any_unit_and_longs_become_epoch_ms():
    for unit in ("s", "ms", "us", "ns"):
        column = pa.array([AT, None], pa.timestamp(unit, tz="UTC"))
        want = AT_MS if unit != "s" else AT_MS // 1000 * 1000
        assert epoch_ms(column).to_pylist() == [want, None], unit
    assert epoch_ms(pa.array([AT], pa.timestamp("us", tz="Europe/Berlin"))).to_pylist() == [AT_MS], "an instant"
    assert epoch_ms(pa.array([AT_MS], pa.int64())).to_pylist() == [AT_MS]
    with pytest.raises(TimestampError, match="is string.*timestamp or a long"):
        epoch_ms(pa.array(["2026-12-03"]))


def test_a_null_row_gets_the_clock_and_the_column_becomes_int64_ms():
    batch = pa.record_batch({"value": [b"a", b"b"], "timestamp": pa.array([AT, None], pa.timestamp("us", tz="UTC"))})
    out = stamped(batch, clock_ms=42_000)
    assert out.schema.field("timestamp").type == pa.int64() and timestamps_of(out) == [AT_MS, 42_000]
    assert out.column("value").to_pylist() == [b"a", b"b"]


def test_rows_without_a_timestamp_column_are_left_to_librdkafka():
    batch = pa.record_batch({"value": [b"a"]})
    assert stamped(batch, 1) is batch and timestamps_of(batch) is None
    records = Records([None], [b"a"])
    assert stamped(records, 1) is records and timestamps_of(records) is None


def test_a_timestamp_before_the_epochs_first_millisecond_is_refused_naming_the_row_and_key():
    batch = pa.record_batch({"key": [b"k1", b"k2"], "value": [b"a", b"b"], "timestamp": pa.array([5, 0], pa.int64())})
    with pytest.raises(TimestampError, match=r"row 1 \(key=b'k2'\) has timestamp 0 ms"):
        stamped(batch, 1)
    before = pa.array([datetime(1969, 12, 31, 23, 59, 59, tzinfo=timezone.utc)], pa.timestamp("us", tz="UTC"))
    with pytest.raises(TimestampError, match="row 0"):
        stamped(pa.record_batch({"value": [b"a"], "timestamp": before}), 1)


def test_a_copied_record_without_a_timestamp_gets_the_clock_never_an_error():
    out = stamped(Records([None] * 3, [b"a", b"b", b"c"], timestamps=[7, None, -1]), clock_ms=99)
    assert timestamps_of(out) == [7, 99, 99]
