"""The registry's keys at validate: the file's rule (offline) and what the registry's answers become."""
from __future__ import annotations

import json

import pytest

from kafka_eos.config.rules_registry import registry_problems
from kafka_eos.config.violations import INVALID, UNAUTHORIZED, UNREACHABLE, exit_code
from kafka_eos.serde import registry as registry_module
from tests.factories import loaded, problems, valid

PERSON = json.dumps({"title": "shop.Person", "type": "object", "properties": {"name": {"type": "string"}}})


def with_registry(tmp_path, side: str = "sink", schema: dict | None = None, **registry) -> dict:
    data = valid(tmp_path)
    data[side]["schema"] = {**(schema if schema is not None else {"inline": PERSON}),
                            "registry": {"url": "http://registry:8081", **registry}}
    return data


def found(tmp_path, side="sink", schema=None, **registry) -> list[tuple[str, str]]:
    return [(v.path, v.message) for v in problems(tmp_path, with_registry(tmp_path, side, schema, **registry))
            if ".registry" in v.path]


def test_auto_register_off_needs_exactly_one_pin_and_pins_need_it_off(tmp_path):
    assert found(tmp_path, auto_register=False, use_latest_version=True) == []
    assert found(tmp_path, auto_register=False, id=7) == []
    assert [p for p, _ in found(tmp_path, auto_register=False)] == ["sink.schema.registry.auto_register"]
    assert [p for p, _ in found(tmp_path, auto_register=False, version=2, id=7)] == \
        ["sink.schema.registry.auto_register"]
    assert found(tmp_path, version=2) == [("sink.schema.registry.version", "version is used only with auto_register: "
                                           "false (the sink registers its schema otherwise)")]


def test_the_source_registers_nothing(tmp_path):
    paths = [p for p, _ in found(tmp_path, "source", {"inline": PERSON}, auto_register=False, use_latest_version=True)]
    assert paths == ["source.schema.registry.use_latest_version"]


def test_a_subject_the_strategy_cannot_name_is_refused_saying_which_setting_names_it(tmp_path):
    assert found(tmp_path, subject_strategy="record") == [], "the JSON Schema's title names the record"
    assert found(tmp_path, schema={"inline": json.dumps({"type": "object"})}, subject_strategy="topic_record") == [
        ("sink.schema.registry.subject", "the topic_record strategy names the subject after the record, and the "
                                         "schema names none")]
    assert [p for p, _ in found(tmp_path, subject="fixed", subject_strategy="record")] == \
        ["sink.schema.registry.subject_strategy"]
    data = with_registry(tmp_path, "source", {})
    data["source"]["topics"] = ["a", "b"]
    assert [(v.path, v.message) for v in problems(tmp_path, data) if ".registry" in v.path] == [
        ("source.schema.registry.subject", "the topic strategy names the subject after the topic, and there is no "
                                           "single topic")]


class Answers:
    """A registry client every call of which fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getattr__(self, name: str):
        def call(*args, **kwargs):
            raise self.error
        return call


@pytest.mark.parametrize("error, kind, code", [
    ("refused", UNAUTHORIZED, 3), ("missing", INVALID, 1), ("down", UNREACHABLE, 2)])
def test_what_the_registry_answers_becomes_the_violation_and_exit_code(tmp_path, monkeypatch, error, kind, code):
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    errors = {"refused": SchemaRegistryError(401, 40101, "Unauthorized"),
              "missing": SchemaRegistryError(404, 40401, "Subject 'out-value' not found."),
              "down": ConnectionError("[Errno 111] Connection refused")}
    monkeypatch.setattr(registry_module, "_client", lambda registry: Answers(errors[error]))
    cfg = loaded(tmp_path, lambda data: data.update(with_registry(
        tmp_path, url="http://bob:pw@registry:8081", auto_register=False, use_latest_version=True)))
    violations = registry_problems(cfg)
    assert [(v.path.startswith("sink.schema.registry"), v.kind) for v in violations] == [(True, kind)]
    assert exit_code(violations) == code and "pw" not in violations[0].message
    assert "the schema registry at http://***@registry:8081" in violations[0].message


def test_a_subject_without_versions_takes_a_first_schema(tmp_path, monkeypatch):
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    monkeypatch.setattr(registry_module, "_client", lambda registry: Answers(SchemaRegistryError(404, 40401, "none")))
    assert registry_problems(loaded(tmp_path, lambda data: data.update(with_registry(tmp_path)))) == []


def test_a_proto_file_with_imports_of_its_own_is_left_to_the_registration(tmp_path, monkeypatch):
    """Its imports are registered first at the start (as references): validate cannot test it, and a
    new subject is no problem."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "money.proto").write_text('syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; }\n')
    (tmp_path / "pay.proto").write_text('syntax = "proto3";\npackage pay;\nimport "common/money.proto";\n'
                                        'message Pay { string id = 1; common.Money amount = 2; }\n')
    monkeypatch.setattr(registry_module, "_client", lambda registry: Answers(SchemaRegistryError(404, 40401, "none")))
    cfg = loaded(tmp_path, lambda data: data["sink"].update(format="protobuf", schema={
        "file": str(tmp_path / "pay.proto"), "registry": {"url": "http://registry:8081"}}))
    assert registry_problems(cfg) == []
