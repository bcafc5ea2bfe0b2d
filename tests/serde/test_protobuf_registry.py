"""Protobuf and JSON Schema lookups in the registry, with confluent-kafka's client replaced by a fake:
references resolved by subject and version, each id compiled once, errors sorted as for Avro."""
from __future__ import annotations

import json
import pickle
from types import SimpleNamespace

import pyarrow as pa
import pytest

from kafka_eos.serde import registry as registry_module
from kafka_eos.serde.codecs import ValueSerde, decoder
from kafka_eos.serde.formats import DataFormat, Registry
from kafka_eos.serde.protobuf_registry import ProtobufSchemas, latest_file_set
from kafka_eos.serde.protobuf_schemas import ProtoSchema, message_class
from kafka_eos.serde.protobuf_wire import frame
from kafka_eos.serde.wire_format import frame as json_frame

REGISTRY = Registry(url="http://registry:8081")
MONEY = 'syntax = "proto3"; package common; message Money { int64 cents = 1; }'
PAY = ('syntax = "proto3"; package pay; import "common/money.proto"; import "google/protobuf/timestamp.proto";'
       ' message Pay { string id = 1; common.Money amount = 2; google.protobuf.Timestamp at = 3; }')
PERSON = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
          "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}, "required": ["name"]}


def registered(text: str, kind: str, refs=()) -> SimpleNamespace:
    return SimpleNamespace(schema_str=text, schema_type=kind, references=list(refs))


class FakeClient:
    def __init__(self) -> None:
        ref = SimpleNamespace(name="common/money.proto", subject="money", version=1)
        self.by_id = {1: registered(PAY, "PROTOBUF", [ref]), 2: registered(json.dumps(PERSON), "JSON"),
                      3: registered("{}", "AVRO")}
        self.versions = {("money", 1): registered(MONEY, "PROTOBUF")}
        self.lookups: list[object] = []

    def get_schema(self, schema_id):
        self.lookups.append(schema_id)
        if schema_id not in self.by_id:
            from confluent_kafka.schema_registry.error import SchemaRegistryError
            raise SchemaRegistryError(404, 40403, f"No content with ID '{schema_id}' was found.")
        return self.by_id[schema_id]

    def get_version(self, subject, version):
        self.lookups.append((subject, version))
        return SimpleNamespace(schema=self.versions[(subject, version)])

    def get_latest_version(self, subject):
        return SimpleNamespace(schema=self.by_id[1], schema_id=1)

    def test_compatibility(self, subject, schema, verbose=False):
        return True   # the registry's compatibility test: the sink asks it before registering

    def get_compatibility(self, subject=None):
        return "BACKWARD"


@pytest.fixture
def fake(monkeypatch):
    client = FakeClient()
    monkeypatch.setattr(registry_module, "_client", lambda registry: client)
    return client


def pay_value(schema: ProtoSchema) -> bytes:
    message = message_class(schema, "pay.Pay")(id="p-1")
    message.amount.cents = 250
    return frame(1, (0,), message.SerializeToString())


def test_a_protobuf_id_is_compiled_with_its_references_once(fake):
    schemas = ProtobufSchemas(REGISTRY)
    schema = schemas(1)
    assert schemas(1) is schema and fake.lookups == [1, ("money", 1)]
    file_set, text, refs = latest_file_set(REGISTRY, "pay-value")
    assert text == PAY and refs[0].name == "common/money.proto"
    serde = ValueSerde(DataFormat.PROTOBUF, registry=REGISTRY, descriptors=file_set, message="pay.Pay")
    decoded, errors = decoder(serde).decode(pa.array([pay_value(schema), frame(404, (0,), b""), frame(3, (0,), b"")]))
    assert decoded.to_pylist()[0] == {"id": "p-1", "amount": {"cents": 250}, "at": None} and errors[0] is None
    assert errors[1].startswith("unknown schema id 404: not in the schema registry at http://registry:8081")
    assert errors[2] == "schema id 3 is a AVRO schema, not Protobuf"
    assert pickle.loads(pickle.dumps(schemas)).registry == REGISTRY


def test_json_schema_values_are_validated_against_their_writer_schema(fake):
    serde = ValueSerde(DataFormat.JSON, schema_text=json.dumps(PERSON), registry=REGISTRY)
    values = [json_frame(2, b'{"name":"ann","age":3,"x":1}'), json_frame(2, b'{"age":3}'), json_frame(2, b"{nope"),
              json_frame(404, b"{}"), b'{"name":"plain"}', json_frame(2, b'{"name":"bo","age":-1}')]
    decoded, errors = decoder(serde).decode(pa.array(values))
    assert decoded.to_pylist()[0] == {"name": "ann", "age": 3} and errors[0] is None
    assert errors[1].startswith("does not match JSON Schema id 2: ") and "'name' is a required property" in errors[1]
    assert errors[2].startswith("invalid JSON") and errors[3].startswith("unknown schema id 404")
    assert "magic byte" in errors[4]
    assert errors[5] == "does not match JSON Schema id 2: age: -1 is less than the minimum of 0 (rule minimum)"


def test_a_registry_that_fails_otherwise_fails_the_batch(monkeypatch):
    from kafka_eos.serde.avro_serde import WriterSchemaUnavailable

    class Down(FakeClient):
        def get_schema(self, schema_id):
            raise ConnectionError("connection refused")
    monkeypatch.setattr(registry_module, "_client", lambda registry: Down())
    serde = ValueSerde(DataFormat.JSON, schema_text=json.dumps(PERSON), registry=REGISTRY)
    with pytest.raises(WriterSchemaUnavailable, match="schema id 2: the schema registry at http://registry:8081 failed"):
        decoder(serde).decode(pa.array([json_frame(2, b"{}")]))


def test_the_sink_registers_its_proto_and_the_source_reads_the_latest_with_references(fake):
    from kafka_eos.serde.protobuf_wire import unframe
    from kafka_eos.serde.resolve import reader_serde, writer_serde
    registered: list = []
    fake.register_schema = lambda subject, schema: registered.append((subject, schema)) or 41
    ping = 'syntax = "proto3"; message Ping { string id = 1; } message Pong { int32 n = 1; }'
    sink = writer_serde(DataFormat.PROTOBUF, ping, None, REGISTRY, "pings-value", "Pong")
    assert sink.schema_id == 41 and registered[0][0] == "pings-value"
    assert (registered[0][1].schema_type, registered[0][1].schema_str) == ("PROTOBUF", ping)
    from kafka_eos.serde.codecs import encoder
    value = encoder(sink).encode(pa.array([{"n": 5}], pa.struct([("n", pa.int32())])))[0].as_py()
    assert unframe(value)[:2] == (41, (1,))
    source = reader_serde(DataFormat.PROTOBUF, None, None, REGISTRY, "pay-value", "pay.Pay")
    assert decoder(source).arrow_type.names == ["id", "amount", "at"] and ("money", 1) in fake.lookups
