"""Kafka messages -> Arrow batch: exact schema Spark checks, values, nulls, headers."""
import pyarrow as pa
import pytest
from confluent_kafka import Message

from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.source.arrow_rows import arrow_schema, binary_column, constant_string, to_record_batch


def msg(offset, key, value, ts=(1, 1_700_000_000_123), headers=None):
    return Message(topic="t", partition=3, offset=offset, key=key, value=value, timestamp=ts, headers=headers)


@pytest.mark.parametrize("values", [[b"a", b"", b"ccc"], [None, b"x", None], [], [None]])
def test_binary_column(values):
    assert binary_column(list(values)).equals(pa.array(values, pa.binary()))


def test_constant_string():
    assert constant_string("topic", 3).equals(pa.array(["topic"] * 3))
    assert constant_string("", 2).equals(pa.array(["", ""]))


@pytest.mark.parametrize("headers", [False, True])
def test_record_batch_matches_spark_schema(headers):
    schema = arrow_schema(source_schema(headers))
    batch = to_record_batch([msg(7, None, b"v1", headers=[("h", b"x"), ("n", None)]),
                             msg(9, b"k", b"v2", ts=(2, 5))], "t", 3, schema)
    assert batch.schema.equals(schema)
    rows = batch.to_pylist()
    assert [r["offset"] for r in rows] == [7, 9]
    assert [r["key"] for r in rows] == [None, b"k"]
    assert {r["topic"] for r in rows} == {"t"} and {r["partition"] for r in rows} == {3}
    assert [r["timestampType"] for r in rows] == [0, 1]  # CreateTime, LogAppendTime (Java ids)
    assert rows[0]["timestamp"].timestamp() == pytest.approx(1_700_000_000.123)
    if headers:
        assert rows[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]
        assert rows[1]["headers"] is None
