"""Registry lookups and driver-side resolution, with the registry client replaced by a fake
(the HTTP client is confluent-kafka's; what is ours is caching, framing and subject choice)."""
from __future__ import annotations

import io
import json
from types import SimpleNamespace

import fastavro
import pyarrow as pa
import pytest

from kafka_eos.config.model import DataFormat, Registry, SchemaRef, SinkSpec, SourceSpec
from kafka_eos.serde import registry as registry_module
from kafka_eos.serde.codecs import decoder, encoder
from kafka_eos.connectors.pipeline.serde_resolve import sink_serde, source_serde
from kafka_eos.serde.wire_format import frame, unframe

SCHEMA = {"type": "record", "name": "P", "fields": [{"name": "amount", "type": "long"}]}
REGISTRY = Registry(url="http://registry:8081")


class FakeClient:
    def __init__(self) -> None:
        self.lookups: list[int] = []
        self.registered: list[tuple[str, str]] = []

    def get_schema(self, schema_id):
        self.lookups.append(schema_id)
        return SimpleNamespace(schema_type="AVRO", schema_str=json.dumps(SCHEMA))

    def get_latest_version(self, subject):
        return SimpleNamespace(schema=SimpleNamespace(schema_str=json.dumps(SCHEMA)), subject=subject)

    def register_schema(self, subject, schema):
        self.registered.append((subject, schema.schema_str))
        return 31

    def test_compatibility(self, subject, schema, verbose=False):
        return True   # the registry's compatibility test: the sink asks it before registering

    def get_compatibility(self, subject=None):
        return "BACKWARD"


@pytest.fixture
def fake(monkeypatch):
    client = FakeClient()
    monkeypatch.setattr(registry_module, "_client", lambda registry: client)
    monkeypatch.setattr(registry_module, "_avro_schema", lambda text: SimpleNamespace(schema_str=text))
    return client


def avro(record: dict) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(SCHEMA), record)
    return buffer.getvalue()


def test_source_reads_the_latest_schema_and_looks_each_id_up_once(fake):
    serde = source_serde(SourceSpec(topics=("payments",), format=DataFormat.AVRO, schema=SchemaRef(registry=REGISTRY)))
    assert json.loads(serde.schema_text) == SCHEMA and serde.registry == REGISTRY
    values = pa.array([frame(5, avro({"amount": i})) for i in range(3)])
    decoded, errors = decoder(serde).decode(values)
    assert decoded.to_pylist() == [{"amount": 0}, {"amount": 1}, {"amount": 2}] and errors == [None] * 3
    assert fake.lookups == [5]


def test_sink_registers_its_schema_under_the_topic_subject(fake):
    spec = SinkSpec(topic="payments-clean", format=DataFormat.AVRO,
                    schema=SchemaRef(file="p.avsc", registry=REGISTRY, text=json.dumps(SCHEMA)))
    serde = sink_serde(spec)
    assert serde.schema_id == 31 and fake.registered[0][0] == "payments-clean-value"
    encoded = encoder(serde).encode(pa.array([{"amount": 7}], decoder(serde).arrow_type))
    assert unframe(encoded[0].as_py()) == (31, avro({"amount": 7}))


def test_registry_lookups_survive_pickling_to_executors(fake):
    import pickle
    schemas = pickle.loads(pickle.dumps(registry_module.RegistrySchemas(REGISTRY)))
    assert schemas(9)["name"] == "P" and schemas(9)["name"] == "P" and fake.lookups == [9]


def test_a_missing_registry_extra_is_explained(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def without_registry(name, *args, **kwargs):
        if name.startswith("confluent_kafka.schema_registry"):
            raise ImportError("No module named 'authlib'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", without_registry)
    with pytest.raises(RuntimeError, match=r"pip install 'confluent-kafka\[schemaregistry\]'"):
        registry_module._registry_module()


class FailingClient(FakeClient):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def get_schema(self, schema_id):
        raise self.error


def _wire_decoder() -> object:
    return decoder(source_serde(SourceSpec(topics=("payments",), format=DataFormat.AVRO,
                                           schema=SchemaRef(registry=REGISTRY, text=json.dumps(SCHEMA)))))


def test_an_unknown_schema_id_is_that_records_decode_error(monkeypatch):
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    client = FailingClient(SchemaRegistryError(404, 40403, "No content with ID '77' was found."))
    monkeypatch.setattr(registry_module, "_client", lambda registry: client)
    decoded, errors = _wire_decoder().decode(pa.array([frame(77, avro({"amount": 1}))]))
    assert decoded.to_pylist() == [None]
    assert errors[0].startswith("unknown schema id 77: not in the schema registry at http://registry:8081")


def test_a_registry_that_fails_otherwise_fails_the_batch_not_the_record(monkeypatch):
    from kafka_eos.serde.avro_serde import WriterSchemaUnavailable
    client = FailingClient(ConnectionError("connection refused"))
    monkeypatch.setattr(registry_module, "_client", lambda registry: client)
    with pytest.raises(WriterSchemaUnavailable, match="schema id 5: the schema registry at http://registry:8081 failed"):
        _wire_decoder().decode(pa.array([frame(5, avro({"amount": 1}))]))


def test_credentials_in_the_url_never_reach_a_records_error(monkeypatch):
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    client = FailingClient(SchemaRegistryError(404, 40403, "No content with ID '77' was found."))
    monkeypatch.setattr(registry_module, "_client", lambda registry: client)
    schemas = registry_module.RegistrySchemas(Registry(url="http://bob:hunter2@registry:8081"))
    with pytest.raises(LookupError) as error:
        schemas(77)
    assert "hunter2" not in str(error.value) and "http://***@registry:8081" in str(error.value)
