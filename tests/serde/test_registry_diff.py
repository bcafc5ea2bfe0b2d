"""Field-by-field reasons one schema cannot read another's records (pure logic)."""
from __future__ import annotations

import json

from kafka_eos.serde.formats import DataFormat
from kafka_eos.serde.protobuf_schemas import ProtoSchema, compile_schema
from kafka_eos.serde.registry_diff import problems


def avro(*fields: dict, name: str = "Payment") -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "shop", "fields": list(fields)})


ID = {"name": "id", "type": "string"}
LINE = {"type": "record", "name": "Line", "fields": [{"name": "qty", "type": "int"}]}


def rules(found) -> list[tuple[str, str]]:
    return [(p.field, p.rule) for p in found]


def test_avro_a_new_field_without_default_a_type_change_and_promotions():
    old = avro(ID, {"name": "amount", "type": "int"})
    assert rules(problems(DataFormat.AVRO, avro(ID, {"name": "amount", "type": "int"},
                                                {"name": "channel", "type": "string"}), old)) == \
        [("channel", "READER_FIELD_MISSING_DEFAULT_VALUE")]
    assert problems(DataFormat.AVRO, avro(ID, {"name": "amount", "type": "int"},
                                          {"name": "channel", "type": "string", "default": "web"}), old) == []
    assert problems(DataFormat.AVRO, avro(ID, {"name": "amount", "type": "long"}), old) == [], "int -> long promotes"
    assert rules(problems(DataFormat.AVRO, old, avro(ID, {"name": "amount", "type": "long"}))) == \
        [("amount", "TYPE_MISMATCH")]
    assert problems(DataFormat.AVRO, avro(ID), old) == [], "a field the reader drops is fine"


def test_avro_nested_records_unions_enums_and_aliases():
    old = avro(ID, {"name": "lines", "type": {"type": "array", "items": LINE}},
               {"name": "state", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "PAID"]}},
               {"name": "note", "type": ["null", "string"]})
    new_line = {**LINE, "fields": [{"name": "qty", "type": "string"}]}
    new = avro(ID, {"name": "lines", "type": {"type": "array", "items": new_line}},
               {"name": "state", "type": {"type": "enum", "name": "S", "symbols": ["NEW"]}},
               {"name": "memo", "aliases": ["note"], "type": ["null", "string"]})
    assert rules(problems(DataFormat.AVRO, new, old)) == [("lines[].qty", "TYPE_MISMATCH"),
                                                          ("state", "MISSING_ENUM_SYMBOLS")]
    assert rules(problems(DataFormat.AVRO, avro(ID, {"name": "note", "type": "string"}), old)) == \
        [("note", "TYPE_MISMATCH")], "a null branch the reader cannot take"


PROTO = 'syntax = "proto3";\npackage s;\nmessage M {{ string a = 1; {b} b = 2; Sub sub = 3; }}\nmessage Sub {{ {q} q = 1; }}\n'


def message(b: str, q: str = "int32"):
    return ProtoSchema(compile_schema(PROTO.format(b=b, q=q))).message("s.M")


def test_protobuf_by_field_number_and_by_name():
    assert rules(problems(DataFormat.PROTOBUF, message("string"), message("int64"))) == \
        [("b", "FIELD_SCALAR_KIND_CHANGED")]
    assert rules(problems(DataFormat.PROTOBUF, message("int64", "string"), message("int64"))) == \
        [("sub.q", "FIELD_SCALAR_KIND_CHANGED")]
    assert problems(DataFormat.PROTOBUF, message("int64"), message("int64")) == []
    renamed = ProtoSchema(compile_schema('syntax = "proto3";\npackage s;\nmessage M { int64 a = 7; }\n')).message("s.M")
    assert rules(problems(DataFormat.PROTOBUF, renamed, message("int64"), by_name=True)) == \
        [("a", "FIELD_SCALAR_KIND_CHANGED")]
    assert problems(DataFormat.PROTOBUF, renamed, message("int64")) == [], "by number: field 7 is new"


def schema(properties: dict, required=(), closed=False) -> str:
    doc = {"type": "object", "properties": properties, "required": list(required)}
    return json.dumps({**doc, "additionalProperties": False} if closed else doc)


def test_json_schema_required_type_and_content_models():
    old = schema({"a": {"type": "string"}}, closed=True)
    assert rules(problems(DataFormat.JSON, schema({"a": {"type": "integer"}}, closed=True), old)) == \
        [("a", "TYPE_CHANGED")]
    assert rules(problems(DataFormat.JSON, schema({"a": {"type": "string"}, "b": {"type": "string"}}, ["b"]), old)) \
        == [("b", "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")]
    assert problems(DataFormat.JSON, schema({"a": {"type": "string"}, "b": {"type": "string"}}), old) == []
    assert rules(problems(DataFormat.JSON, schema({"a": {"type": "string"}, "b": {"type": "string"}}),
                          schema({"a": {"type": "string"}}))) == [("b", "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")]
    assert rules(problems(DataFormat.JSON, schema({}, closed=True), old)) == \
        [("a", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")]
    assert problems(DataFormat.JSON, schema({"n": {"type": "number"}}), schema({"n": {"type": "integer"}})) == []
