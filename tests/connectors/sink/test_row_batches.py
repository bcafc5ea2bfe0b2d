"""A row writer's task (pyspark 4.0) turns the sink's rows into the Arrow batches its writer takes."""
from __future__ import annotations

from pyspark.sql import Row
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructField, StructType)

from kafka_eos.connectors.sink.row_batches import arrow_batches

SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))),
])


def row(i: int) -> Row:
    header = Row(key="h", value=bytearray(b"%d" % i))
    return Row(key=None if i % 3 == 0 else bytearray(b"k%d" % i), value=bytearray(b"v%d" % i), topic="out",
               partition=i % 4, headers=[header] if i % 2 else [])


def test_rows_become_batches_in_order_with_the_sink_schema():
    batches = list(arrow_batches((row(i) for i in range(25)), SCHEMA, size=10))
    assert [b.num_rows for b in batches] == [10, 10, 5]
    assert batches[0].schema.names == ["key", "value", "topic", "partition", "headers"]
    values = [v for b in batches for v in b.column("value").to_pylist()]
    assert values == [b"v%d" % i for i in range(25)], "every row once, in order"
    keys = batches[0].column("key").to_pylist()
    assert keys[0] is None and keys[1] == b"k1", "a null key stays null"
    assert batches[0].column("headers").to_pylist()[1] == [{"key": "h", "value": b"1"}]


def test_no_rows_no_batches():
    assert list(arrow_batches(iter(()), SCHEMA)) == []


def test_a_rows_naive_local_timestamp_becomes_its_instant(monkeypatch):
    import time
    from datetime import datetime, timezone

    from pyspark.sql.types import TimestampType
    monkeypatch.setenv("TZ", "America/New_York")  # pyspark gives a row's timestamp in the process's local time
    time.tzset()
    try:
        instant = datetime(2026, 12, 3, 21, 0, tzinfo=timezone.utc)
        local = datetime.fromtimestamp(instant.timestamp())  # naive, as pyspark hands it over
        assert local.hour == 16
        schema = StructType([StructField("value", BinaryType()), StructField("timestamp", TimestampType())])
        batch = next(arrow_batches([Row(value=b"v", timestamp=local)], schema))
        assert batch.column("timestamp")[0].as_py() == instant
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
