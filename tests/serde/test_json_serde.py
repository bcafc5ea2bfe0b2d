"""JSON serde: typed round trips, per-row errors, tombstones, timestamps as written by producers."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from kafka_eos.serde.arrow_types import SchemaError, arrow_type, parse_schema
from kafka_eos.serde.json_serde import JsonDecoder, JsonEncoder

UTC = dt.timezone.utc
SCHEMA = json.dumps({"type": "record", "name": "Everything", "fields": [
    {"name": "id", "type": "long"},
    {"name": "small", "type": "int"},
    {"name": "ratio", "type": "double"},
    {"name": "ok", "type": "boolean"},
    {"name": "name", "type": ["null", "string"]},
    {"name": "blob", "type": "bytes"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "counts", "type": {"type": "map", "values": "long"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "float"}]}},
]})
ROW = {"id": 2**40, "small": -3, "ratio": 0.25, "ok": True, "name": "ü-name", "blob": b"\x00\xff",
       "price": Decimal("12.34"), "at": dt.datetime(2024, 5, 1, 12, 30, 15, 123000, tzinfo=UTC),
       "day": dt.date(2024, 5, 1), "tags": ["a", "b"], "counts": {"x": 1, "y": 2}, "kind": "B", "inner": {"x": 1.5}}


def test_round_trip_every_type():
    decoder = JsonDecoder(SCHEMA)
    original = pa.array([ROW, {**ROW, "name": None, "tags": [], "counts": {}}, None], decoder.arrow_type)
    encoded = JsonEncoder().encode(original)
    assert pa.types.is_binary(encoded.type) and encoded[2].as_py() is None
    decoded, errors = decoder.decode(encoded)
    assert errors == [None, None, None]
    assert decoded.equals(original)
    assert decoded.to_pylist(maps_as_pydicts="strict")[0] == ROW


def test_encoded_json_is_plain_readable_json():
    decoder = JsonDecoder(SCHEMA)
    text = JsonEncoder().encode(pa.array([ROW], decoder.arrow_type))[0].as_py()
    document = json.loads(text)
    assert document["at"] == "2024-05-01T12:30:15.123000+00:00" and document["price"] == "12.34"
    assert document["blob"] == "AP8=" and document["counts"] == {"x": 1, "y": 2}


def test_what_producers_write_is_accepted():
    decoder = JsonDecoder(json.dumps({"type": "record", "name": "E", "fields": [
        {"name": "id", "type": "long"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "amount", "type": "double"}]}))
    values = pa.array([b'{"id": 1, "at": "2024-01-01T00:00:00Z", "amount": 3, "extra": [1, 2]}',
                       b'{"id": 2, "at": 1704067200000}',
                       "{\n  \"id\": 3\n}".encode()])
    decoded, errors = decoder.decode(values)
    assert errors == [None, None, None]
    rows = decoded.to_pylist()
    assert rows[0]["at"] == rows[1]["at"] == dt.datetime(2024, 1, 1, tzinfo=UTC)
    assert rows[0]["amount"] == 3.0 and rows[2] == {"id": 3, "at": None, "amount": None}


@pytest.mark.parametrize("raw,needle", [
    (b"not json", "invalid JSON"),
    (b'{"id": "seven"}', "id: 'seven' is not a whole number"),
    (b'{"id": 1.5}', "not a whole number"),
    (b"[1, 2]", "not an object"),
    (b"null", "document is null"),
    (b'{"id": 1, "at": "yesterday"}', "not an ISO-8601 timestamp"),
    (b'{"id": 99999999999999999999999}', "does not fit"),
    (b"\xff\xfe", "invalid JSON"),
])
def test_a_bad_row_fails_alone(raw, needle):
    decoder = JsonDecoder(json.dumps({"type": "record", "name": "E", "fields": [
        {"name": "id", "type": "long"}, {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}))
    decoded, errors = decoder.decode(pa.array([b'{"id": 1}', raw, b'{"id": 3}'], pa.binary()))
    assert errors[0] is None and errors[2] is None and needle in errors[1], errors
    assert decoded.to_pylist() == [{"id": 1, "at": None}, None, {"id": 3, "at": None}]


def test_tombstones_decode_to_null_without_error():
    decoder = JsonDecoder(json.dumps({"type": "record", "name": "E", "fields": [{"name": "id", "type": "long"}]}))
    decoded, errors = decoder.decode(pa.array([None, b'{"id": 1}'], pa.binary()))
    assert errors == [None, None] and decoded.to_pylist() == [None, {"id": 1}]


def test_string_input_column_is_accepted():
    decoder = JsonDecoder(json.dumps({"type": "record", "name": "E", "fields": [{"name": "id", "type": "long"}]}))
    decoded, _ = decoder.decode(pa.array(['{"id": 4}'], pa.string()))
    assert decoded.to_pylist() == [{"id": 4}]


def test_schemas_spark_cannot_hold_are_refused():
    with pytest.raises(SchemaError, match="several non-null types"):
        arrow_type(parse_schema(json.dumps(["int", "string"])))
    with pytest.raises(SchemaError, match="not a valid Avro schema"):
        parse_schema('{"type": "record"}')
