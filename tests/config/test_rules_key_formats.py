"""Keys with a schema (``key_format``, ``key_schema``) on the source and the sink: the file's rules,
each refusal under the key's own YAML path; the registry's subject of a key is ``<topic>-key``."""
from __future__ import annotations

import json

from kafka_eos.config.rules_registry import subject_of
from kafka_eos.connectors.pipeline.pipeline_shape import shape_of
from tests.factories import loaded, problems, valid

KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}


def paths(tmp_path, change) -> list[tuple[str, str]]:
    data = valid(tmp_path)
    change(data)
    return [(v.path, v.message) for v in problems(tmp_path, data) if "key" in v.path]


def test_a_key_format_with_a_schema_needs_the_keys_schema_and_takes_every_format(tmp_path):
    def avro_without(data):
        data["source"]["key_format"] = "avro"
    assert paths(tmp_path, avro_without) == [("source.key_schema", "key_format avro needs a schema")]

    def each(fmt, schema):
        def change(data):
            data["source"]["key_format"] = data["sink"]["key_format"] = fmt
            data["source"]["key_schema"] = data["sink"]["key_schema"] = schema
        return change
    assert paths(tmp_path, each("avro", {"inline": KEY})) == []
    assert paths(tmp_path, each("json", {"inline": KEY})) == []
    proto = 'syntax = "proto3"; package shop; message OrderKey { int64 id = 1; }'
    assert paths(tmp_path, each("protobuf", {"inline": proto, "message": "shop.OrderKey"})) == []


def test_a_keys_schema_without_a_format_that_reads_it_is_refused_under_the_keys_path(tmp_path):
    def bytes_with_schema(data):
        data["sink"]["key_schema"] = {"inline": KEY}
    assert paths(tmp_path, bytes_with_schema) == [
        ("sink.key_schema", "a schema is only used with key_format json, avro or protobuf, not bytes")]

    def bad_schema(data):
        data["source"]["key_format"] = "avro"
        data["source"]["key_schema"] = {"inline": json.dumps({"type": "record", "name": "K", "fields": "x"})}
    assert [p for p, _ in paths(tmp_path, bad_schema)] == ["source.key_schema.inline"]

    def sink_protobuf_without(data):
        data["sink"]["key_format"] = "protobuf"
    assert [p for p, _ in paths(tmp_path, sink_protobuf_without)] == ["sink.key_schema"]


def test_a_keys_registry_subject_is_topic_key_and_a_refusal_names_the_keys_registry(tmp_path):
    cfg = loaded(tmp_path, lambda data: data["source"].update(
        key_format="avro", key_schema={"inline": KEY, "registry": {"url": "http://registry:8081"}}))
    assert cfg.source.key_schema is not None
    assert subject_of(cfg.source.key_schema, cfg.source.key_format, cfg.source.topics, "source", "key") == "in-key"

    def no_single_topic(data):
        data["source"]["topics"] = ["a", "b"]
        data["source"]["key_format"] = "avro"
        data["source"]["key_schema"] = {"registry": {"url": "http://registry:8081"}}
    assert paths(tmp_path, no_single_topic) == [
        ("source.key_schema.registry.subject", "the topic strategy names the subject after the topic, and there is "
                                               "no single topic")]


def test_a_keys_registry_credentials_are_secrets(tmp_path):
    cfg = loaded(tmp_path, lambda data: data["sink"].update(
        key_format="avro", key_schema={"inline": KEY, "registry": {"url": "http://r:8081",
                                                                    "basic_auth_user_info": "u:key-secret"}}))
    assert "u:key-secret" in [s.reveal() for s in cfg.secrets()]


def test_a_pipeline_without_key_schemas_keeps_its_recorded_shape(tmp_path):
    """Checkpoints record the shape's fingerprints: a file without keys' schemas fingerprints as
    before keys had them (the values the code of a7c8c30 gives for ``valid``)."""
    before = shape_of(loaded(tmp_path))
    assert (before.decode, before.sink) == ("fd277eaa0f2d37f1", "d77c28e85ceb51de")
    keyed = shape_of(loaded(tmp_path, lambda data: data["source"].update(key_format="avro", key_schema={"inline": KEY})))
    assert keyed.decode != before.decode
