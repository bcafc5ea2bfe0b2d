"""The formats' schema rule: protobuf and JSON Schema settings refused at validate, naming the field."""
from __future__ import annotations

import json

import pytest

from kafka_eos.config.model import DataFormat, SchemaRef
from kafka_eos.config.rules_formats import schema_violations
from tests.factories import problems, valid

ORDER = 'syntax = "proto3"; package shop; message Order { string id = 1; Order parent = 2; } message Ping { int32 n = 1; }'


def with_source(tmp_path, fmt: str, schema: dict) -> list:
    data = valid(tmp_path)
    data["source"]["format"], data["source"]["schema"] = fmt, schema
    return [(v.path, v.message) for v in problems(tmp_path, data) if ".schema" in v.path]


def protobuf(**schema) -> list:
    return [(v.path, v.message) for v in schema_violations(SchemaRef(**schema), DataFormat.PROTOBUF, "source", True)]


def test_a_protobuf_schema_that_cannot_be_read_is_refused_at_validate(tmp_path):
    found = with_source(tmp_path, "protobuf", {"inline": ORDER})   # the file's first message: Order
    assert any(p == "source.schema.message" and m.startswith(
        "shop.Order: field parent: message shop.Order contains itself (a recursive type has no Spark type); leave "
        "the field out of the schema the pipeline reads, or carry it as bytes") for p, m in found), found
    found = with_source(tmp_path, "protobuf", {"inline": 'syntax = "proto3"; message {'})
    assert any(p == "source.schema.inline" and "does not compile" in m for p, m in found), found


@pytest.mark.parametrize("message, problem", [("shop.Ping", None), ("Ping", None), ("Nope", "no message 'Nope'")])
def test_the_message_is_looked_up_by_name(message, problem):
    found = protobuf(inline=ORDER, text=ORDER, message=message)
    assert found == [] if problem is None else (found[0][0] == "source.schema.message" and problem in found[0][1])


def test_a_protobuf_file_with_its_imports_passes(tmp_path):
    (tmp_path / "money.proto").write_text('syntax = "proto3"; package m; message Money { int64 cents = 1; }')
    (tmp_path / "pay.proto").write_text('syntax = "proto3"; import "money.proto"; import "google/protobuf/timestamp.proto";'
                                        ' message Pay { m.Money amount = 1; google.protobuf.Timestamp at = 2; }')
    assert with_source(tmp_path, "protobuf", {"file": str(tmp_path / "pay.proto")}) == []


def test_a_message_name_belongs_to_protobuf_and_json_with_a_registry_takes_a_json_schema(tmp_path):
    avro = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    found = schema_violations(SchemaRef(inline=avro, text=avro, message="X"), DataFormat.AVRO, "source", True)
    assert [v.path for v in found] == ["source.schema.message"]
    person = {"type": "object", "properties": {"name": {"type": "string"}}}
    assert with_source(tmp_path, "json", {"inline": json.dumps(person), "registry": {"url": "http://r:8081"}}) == []
    bad = {"type": "object", "properties": {"v": {"type": ["string", "integer"]}}}
    found = with_source(tmp_path, "json", {"inline": json.dumps(bad), "registry": {"url": "http://r:8081"}})
    assert found and found[0][0] == "source.schema.inline" and "field v" in found[0][1]


def test_the_yaml_message_key_picks_the_message(tmp_path):
    """`schema.message` in the file reaches the rule (it was an unknown key before the loader took it)."""
    assert with_source(tmp_path, "protobuf", {"inline": ORDER, "message": "shop.Ping"}) == []
    found = with_source(tmp_path, "protobuf", {"inline": ORDER, "message": "Nope"})
    assert [p for p, _ in found] == ["source.schema.message"] and "no message 'Nope'" in found[0][1]
