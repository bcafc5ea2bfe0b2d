"""JSON Schema -> Spark types, and the JSON Schema encoder (framed, each row validated)."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from kafka_eos.serde.arrow_types import SchemaError
from kafka_eos.serde.codecs import ValueSerde, encoder
from kafka_eos.serde.formats import DataFormat, Registry
from kafka_eos.serde.json_schema_types import arrow_type
from kafka_eos.serde.wire_format import unframe

ORDER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "properties": {
        "id": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": ["number", "null"]},
        "paid": {"type": "boolean"}, "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"}, "status": {"enum": ["NEW", "PAID"]},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}},
        "tags": {"type": "object", "additionalProperties": {"type": "integer"}},
        "note": {"oneOf": [{"type": "null"}, {"type": "string"}]},
    },
    "required": ["id", "qty"],
    "$defs": {"line": {"type": "object", "properties": {"sku": {"type": "string"}}}},
}


def test_every_kind_of_property_has_its_spark_type():
    assert arrow_type(ORDER) == pa.struct([
        ("id", pa.string()), ("qty", pa.int64()), ("price", pa.float64()), ("paid", pa.bool_()),
        ("at", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("status", pa.string()),
        ("lines", pa.list_(pa.struct([("sku", pa.string())]))), ("tags", pa.map_(pa.string(), pa.int64())),
        ("note", pa.string())])


@pytest.mark.parametrize("schema, reason", [
    ({"type": "object", "properties": {"v": {"type": ["string", "integer"]}}}, r"field v: type \['string', 'integer'\]"),
    ({"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}, "field v: anyOf of 2"),
    ({"type": "object", "properties": {"v": {"type": "object"}}}, "field v: an object with neither properties"),
    ({"type": "object", "properties": {"v": {"$ref": "other.json#/x"}}}, "field v: .ref 'other.json#/x' points outside"),
    ({"type": "object", "properties": {"v": {"$ref": "#/$defs/n"}},
      "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}}, "field v.next: .ref #/.defs/n"),
])
def test_what_has_no_spark_type_is_refused_naming_the_field(schema, reason):
    with pytest.raises(SchemaError, match=reason):
        arrow_type(schema)


def test_the_encoder_frames_valid_rows_and_names_the_row_that_breaks_the_schema():
    serde = ValueSerde(DataFormat.JSON, schema_text=json.dumps(ORDER), registry=Registry("http://r:8081"), schema_id=12)
    t = pa.struct([("id", pa.string()), ("qty", pa.int64()), ("at", pa.timestamp("us", tz="UTC"))])
    at = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
    out = encoder(serde).encode(pa.array([{"id": "a", "qty": 1, "at": at}, None], t))
    assert unframe(out[0].as_py()) == (12, b'{"id":"a","qty":1,"at":"2026-03-01T00:00:00+00:00"}') and out[1].as_py() is None
    with pytest.raises(ValueError, match=r"row 0 does not match the sink's JSON Schema \(id 12\): qty: None is not of type"):
        encoder(serde).encode(pa.array([{"id": "a", "qty": None, "at": at}], t))
