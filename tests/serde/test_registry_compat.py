"""The sink's writer schema against a registry (a fake client: the registry's answers are given;
the real registry's are in integration_tests/pipeline/test_registry_controls.py)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from kafka_eos.serde import registry as registry_module
from kafka_eos.serde.formats import DataFormat, Registry
from kafka_eos.serde.registry_compat import SchemaIncompatible
from kafka_eos.serde.resolve import writer_serde

V1 = {"type": "record", "name": "Payment", "namespace": "shop",
      "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "channel", "type": "string"}]}


class Registered:
    """A fake registry holding one subject at version 3 (id 40) of ``V1``, level BACKWARD."""

    def __init__(self, compatible: bool = True) -> None:
        self.compatible, self.registered, self.asked = compatible, [], []
        self.latest = SimpleNamespace(schema=SimpleNamespace(schema_str=json.dumps(V1), schema_type="AVRO",
                                                             references=[]), schema_id=40, version=3)

    def test_compatibility(self, subject, schema, verbose=False):
        self.asked.append((subject, verbose))
        return self.compatible

    def get_compatibility(self, subject=None):
        if subject is not None:
            from confluent_kafka.schema_registry.error import SchemaRegistryError
            raise SchemaRegistryError(404, 40408, "Subject does not have subject-level compatibility configured")
        return "BACKWARD"

    def get_latest_version(self, subject):
        return self.latest

    def get_version(self, subject, version):
        return self.latest

    def get_schema(self, schema_id):
        return self.latest.schema

    def register_schema(self, subject, schema):
        self.registered.append(subject)
        return 41


@pytest.fixture
def client(monkeypatch):
    def make(**kwargs) -> Registered:
        fake = Registered(**kwargs)
        monkeypatch.setattr(registry_module, "_client", lambda registry: fake)
        return fake
    return make


def test_an_incompatible_schema_is_refused_naming_the_field_the_rule_and_the_level(client):
    fake = client(compatible=False)
    with pytest.raises(SchemaIncompatible) as refused:
        writer_serde(DataFormat.AVRO, json.dumps(V2), None, Registry("http://r"), None, topic="payments")
    assert fake.asked == [("payments-value", True)] and fake.registered == [], "asked, nothing registered"
    assert ("the sink's schema breaks subject payments-value's compatibility level BACKWARD against its version 3 "
            "(id 40): field channel: the reader has the field without a default") in str(refused.value)
    assert "(READER_FIELD_MISSING_DEFAULT_VALUE)" in str(refused.value)


def test_a_compatible_schema_is_registered(client):
    fake = client(compatible=True)
    serde = writer_serde(DataFormat.AVRO, json.dumps(V2), None, Registry("http://r"), None, topic="payments")
    assert (serde.schema_id, fake.registered) == (41, ["payments-value"])


def test_auto_register_off_writes_with_the_latest_and_registers_nothing(client):
    fake = client()
    pinned = Registry("http://r", auto_register=False, use_latest_version=True)
    fewer = {**V1, "fields": V1["fields"][:1] + [{"name": "amount", "type": "float"}]}   # float -> double promotes
    serde = writer_serde(DataFormat.AVRO, json.dumps(fewer), None, pinned, None, topic="payments")
    assert (serde.schema_id, json.loads(serde.schema_text), fake.registered, fake.asked) == (40, V1, [], [])


def test_auto_register_off_refuses_a_configured_schema_the_pinned_one_cannot_write(client):
    client()
    pinned = Registry("http://r", auto_register=False, version=3)
    wider = {**V1, "fields": [{"name": "id", "type": "long"}, V1["fields"][1]]}
    with pytest.raises(SchemaIncompatible, match=r"auto_register is off and the sink writes with version 3 of "
                                                 r"payments-value \(id 40\), which cannot write what the configured "
                                                 r"schema describes: field id: long cannot be read as string "
                                                 r"\(TYPE_MISMATCH\)"):
        writer_serde(DataFormat.AVRO, json.dumps(wider), None, pinned, None, topic="payments")


def test_a_pinned_schema_of_another_type_is_refused(client):
    client()
    pinned = Registry("http://r", auto_register=False, schema_id=40)
    with pytest.raises(SchemaIncompatible, match="schema id 40 is a AVRO schema, the sink writes json"):
        writer_serde(DataFormat.JSON, json.dumps({"type": "object"}), None, pinned, None, topic="payments")


def test_a_transitive_level_is_tested_against_every_version_and_the_breaking_one_named(client):
    fake = client(compatible=False)
    fake.get_compatibility = lambda subject=None: "BACKWARD_TRANSITIVE"
    asked_all = []
    fake.test_compatibility_all_versions = lambda subject, schema, verbose=False: asked_all.append(subject) or False
    v1 = {**V1, "fields": [{"name": "id", "type": "int"}]}                      # version 1: id was an int
    versions = {3: fake.latest, 2: fake.latest,
                1: SimpleNamespace(schema=SimpleNamespace(schema_str=json.dumps(v1), schema_type="AVRO", references=[]),
                                   schema_id=38, version=1)}
    fake.get_version = lambda subject, version: versions[version]
    widened = {**V1, "fields": [*V1["fields"], {"name": "channel", "type": "string", "default": "web"}]}
    with pytest.raises(SchemaIncompatible, match=r"level BACKWARD_TRANSITIVE against its version 1 \(id 38\): field "
                                                 r"id: int cannot be read as string \(TYPE_MISMATCH\)"):
        writer_serde(DataFormat.AVRO, json.dumps(widened), None, Registry("http://r"), None, topic="payments")
    assert asked_all == ["payments-value"] and fake.asked == [], "every version asked, as registering checks"


ORDER = ('syntax = "proto3";\npackage shop;\nmessage Ping {{ string id = 1; }}\n'
         'message Order {{ string id = 1; {amount} amount = 2; }}\n')


def test_protobuf_auto_register_off_writes_the_pinned_message_or_names_the_field_it_cannot_write(client):
    from kafka_eos.serde.protobuf_schemas import ProtoSchema
    fake = client()
    fake.latest = SimpleNamespace(schema=SimpleNamespace(schema_str=ORDER.format(amount="int64"), schema_type="PROTOBUF",
                                                         references=[]), schema_id=40, version=3)
    pinned = Registry("http://r", auto_register=False, use_latest_version=True)
    serde = writer_serde(DataFormat.PROTOBUF, ORDER.format(amount="int64"), None, pinned, None, "shop.Order", "orders")
    assert (serde.schema_id, serde.message, fake.registered) == (40, "shop.Order", [])
    assert ProtoSchema(serde.descriptors).message("shop.Order").fields_by_name["amount"].type == 3   # int64
    with pytest.raises(SchemaIncompatible, match=r"field amount: string is read as int64 \(FIELD_SCALAR_KIND_CHANGED\)"):
        writer_serde(DataFormat.PROTOBUF, ORDER.format(amount="string"), None, pinned, None, "shop.Order", "orders")
    with pytest.raises(SchemaIncompatible, match="the registered schema has no message shop.Invoice"):
        writer_serde(DataFormat.PROTOBUF, ORDER.format(amount="int64").replace("Order", "Invoice"), None, pinned, None,
                     "shop.Invoice", "orders")
