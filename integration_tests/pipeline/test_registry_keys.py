"""Keys through a real schema registry (issue 66): ``key_format`` / ``key_schema`` with Avro, JSON
Schema and Protobuf, against confluent-kafka's own serializers as the independent reference.

- make test (no Spark): for each format, the key bytes kafka-eos writes equal Confluent's
  serializer's for ``MessageField.KEY`` (subject ``<topic>-key``, the same id; Protobuf: the same
  message indexes and body, the id of each one's own registration), and kafka-eos reads Confluent's keys.
- make chaos: a Protobuf, a JSON Schema and an Avro pipeline, keys and values both ways through
  the registry, a DLQ with poison keys and values, a timestamp column; the driver killed after
  batch 1's commit decision, then run again: every id once in read_committed output (decoded by
  Confluent's deserializers), each record's CreateTime its row's, each poison record once in the
  DLQ with its original key bytes, its source record's timestamp and the error naming the key.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from confluent_kafka.serialization import MessageField, SerializationContext

from integration_tests.kafka_tools import unique
from integration_tests.registry_tools import client
from kafka_eos.secrets import Secret
from kafka_eos.serde.codecs import decoder, encoder
from kafka_eos.serde.formats import DataFormat, Registry
from kafka_eos.serde.protobuf_schemas import ProtoSchema, compile_schema, message_class
from kafka_eos.serde.resolve import reader_serde, writer_serde

DAY_MS = 86_400_000


def ours(registry) -> Registry:
    return Registry(registry.url, basic_auth_user_info=Secret(registry.user_info) if registry.user_info else None)


def key_proto(run: str) -> str:
    return f'syntax = "proto3";\npackage keys.{run};\nmessage OrderKey {{ string id = 1; int32 shard = 2; }}\n'


def value_proto(run: str) -> str:
    return (f'syntax = "proto3";\npackage shop.{run};\n'
            "message Order { string id = 1; int64 amount = 2; int64 created_ms = 3; }\n")


def key_json_schema(run: str) -> dict:
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": f"keys.{run}.OrderKey", "type": "object",
            "properties": {"id": {"type": "string"}, "shard": {"type": "integer"}}, "required": ["id"]}


def value_json_schema(run: str) -> dict:
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": f"shop.{run}.Order", "type": "object",
            "properties": {"id": {"type": "string"}, "amount": {"type": "integer"}, "created_ms": {"type": "integer"}},
            "required": ["id", "amount", "created_ms"]}


def value_avro(run: str) -> dict:
    return {"type": "record", "name": "Order", "namespace": f"shop.{run}",
            "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"},
                       {"name": "created_ms", "type": "long"}]}


def key_avro(run: str) -> dict:
    return {"type": "record", "name": "OrderKey", "namespace": f"keys.{run}",
            "fields": [{"name": "id", "type": "string"}, {"name": "shard", "type": "int"}]}


class Confluent:
    """confluent-kafka's serializer and deserializer of one format, for keys or values."""

    def __init__(self, registry, fmt: DataFormat, schema: str, message: str | None = None) -> None:
        registry_client, conf = client(registry), {"auto.register.schemas": True}
        if fmt is DataFormat.AVRO:
            from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
            self.serialize, self.deserialize = AvroSerializer(registry_client, schema, conf=conf), \
                AvroDeserializer(registry_client)
            self.make = dict
        elif fmt is DataFormat.JSON:
            from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
            self.serialize = JSONSerializer(schema, registry_client, conf=conf)
            self.deserialize = JSONDeserializer(schema, schema_registry_client=registry_client)
            self.make = dict
        else:
            from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
            cls = message_class(ProtoSchema(compile_schema(schema, f"{unique('p')}.proto")), message or "")
            self.serialize = ProtobufSerializer(cls, registry_client, {**conf, "use.deprecated.format": False})
            self.deserialize = ProtobufDeserializer(cls, {"use.deprecated.format": False})
            self.make = lambda row: cls(**row)

    def bytes_of(self, row: dict, topic: str, field: MessageField) -> bytes:
        return self.serialize(self.make(row), SerializationContext(topic, field))

    def row_of(self, data: bytes, topic: str, field: MessageField) -> dict:
        found = self.deserialize(data, SerializationContext(topic, field))
        if isinstance(found, dict):
            return found
        return {f.name: getattr(found, f.name) for f in found.DESCRIPTOR.fields}


@pytest.mark.parametrize("fmt", [DataFormat.AVRO, DataFormat.JSON, DataFormat.PROTOBUF])
def test_key_bytes_equal_confluents_key_serializer_and_each_side_reads_the_others(schema_registry, fmt):
    run, topic = unique("k").replace("-", "_"), unique("keyed")
    text = {DataFormat.AVRO: json.dumps(key_avro(run)), DataFormat.JSON: json.dumps(key_json_schema(run)),
            DataFormat.PROTOBUF: key_proto(run)}[fmt]
    message = f"keys.{run}.OrderKey" if fmt is DataFormat.PROTOBUF else None
    confluent = Confluent(schema_registry, fmt, text, message)
    row = {"id": "order-7", "shard": 3}
    theirs = confluent.bytes_of(row, topic, MessageField.KEY)
    assert f"{topic}-key" in client(schema_registry).get_subjects()
    sink = writer_serde(fmt, text, None, ours(schema_registry), None, message, topic, field="key")
    mine = encoder(sink).encode(pa.array([row], decoder(sink).arrow_type)).to_pylist()[0]
    if fmt is DataFormat.PROTOBUF:   # Confluent's Python client registers a base64 descriptor, kafka-eos the text
        assert mine[5:] == theirs[5:], "the same message indexes and body"
        ids = {client(schema_registry).get_version(f"{topic}-key", v).schema_id
               for v in client(schema_registry).get_versions(f"{topic}-key")}
        assert {int.from_bytes(mine[1:5], "big"), int.from_bytes(theirs[1:5], "big")} <= ids
    else:
        assert mine == theirs, "the same schema under <topic>-key: its id, and the same bytes"
    assert confluent.row_of(mine, topic, MessageField.KEY) == row
    source = reader_serde(fmt, None, None, ours(schema_registry), None, message, topic, field="key")
    decoded, errors = decoder(source).decode(pa.array([theirs]))
    assert errors == [None] and decoded.to_pylist() == [row]


def keyed_pipeline(tmp_path: Path, registry, fmt: DataFormat, run: str, topics: dict[str, str]) -> dict:
    """Keys and values of ``fmt`` both ways through the registry (the source reads the subjects'
    latest; the sink registers its own under <sink>-key and <sink>-value), a DLQ, a timestamp column."""
    reg = {"url": registry.url, "basic_auth_user_info": registry.user_info or ""}
    if fmt is DataFormat.PROTOBUF:
        key_schema = {"inline": key_proto(run), "message": f"keys.{run}.OrderKey", "registry": reg}
        value_schema = {"inline": value_proto(run), "message": f"shop.{run}.Order", "registry": reg}
    elif fmt is DataFormat.AVRO:
        key_schema = {"inline": json.dumps(key_avro(run)), "registry": reg}
        value_schema = {"inline": json.dumps(value_avro(run)), "registry": reg}
    else:
        key_schema = {"inline": json.dumps(key_json_schema(run)), "registry": reg}
        value_schema = {"inline": json.dumps(value_json_schema(run)), "registry": reg}
    message = {"message": value_schema["message"]} if "message" in value_schema else {}
    key_message = {"message": key_schema["message"]} if "message" in key_schema else {}
    cluster = {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}
    return {
        "version": 1, "name": f"keyed-{fmt.value}",
        "source": {"kafka": cluster, "topics": [topics["source"]], "starting_offsets": "earliest",
                   "max_offsets_per_trigger": 100, "format": fmt.value, "schema": {"registry": reg, **message},
                   "key_format": fmt.value, "key_schema": {"registry": reg, **key_message}},
        "transform": {"sql": "SELECT key, value, timestamp_millis(value.created_ms) AS created FROM source "
                             "WHERE value.amount >= 0"},
        "sink": {"kafka": cluster, "topic": topics["sink"], "format": fmt.value, "schema": value_schema,
                 "key_format": fmt.value, "key_schema": key_schema, "timestamp_column": "created",
                 "transactional_id_prefix": unique("keyed")},
        "checkpoint": {"location": str(tmp_path / "ck"), "trigger": "available_now"},
        "errors": {"on_decode_error": "dlq", "dlq_topic": topics["dlq"]},
    }


@pytest.mark.chaos  # two Spark runs with a driver killed between them (make chaos KIND=pipeline)
@pytest.mark.parametrize("fmt", [DataFormat.PROTOBUF, DataFormat.JSON, DataFormat.AVRO])
def test_keys_and_values_through_the_registry_killed_after_a_decision_are_exactly_once(
        bootstrap, schema_registry, tmp_path, fmt):
    from confluent_kafka import TIMESTAMP_CREATE_TIME
    from integration_tests.kafka_tools import assert_exactly_once, produce, read_all, tally
    from integration_tests.pipeline_cli import kafka_eos, start_kafka_eos
    from integration_tests.pipeline_runs import kill_group, wait_for
    from integration_tests.registry_tools import cli_env
    from kafka_eos.connectors.demo_data import create_topics
    from kafka_eos.serde.wire_format import frame
    run = unique("r").replace("-", "_")
    topics = {"source": unique(f"keyed-{fmt.value}-in"), "sink": unique(f"keyed-{fmt.value}-out"),
              "dlq": unique(f"keyed-{fmt.value}-dlq")}
    create_topics(bootstrap, {topics["source"]: 2, topics["sink"]: 2, topics["dlq"]: 1})
    if fmt is DataFormat.PROTOBUF:
        keys = Confluent(schema_registry, fmt, key_proto(run), f"keys.{run}.OrderKey")
        values = Confluent(schema_registry, fmt, value_proto(run), f"shop.{run}.Order")
    elif fmt is DataFormat.AVRO:
        keys = Confluent(schema_registry, fmt, json.dumps(key_avro(run)))
        values = Confluent(schema_registry, fmt, json.dumps(value_avro(run)))
    else:
        keys = Confluent(schema_registry, fmt, json.dumps(key_json_schema(run)))
        values = Confluent(schema_registry, fmt, json.dumps(value_json_schema(run)))
    n, base = 300, int(time.time() * 1000) - DAY_MS
    good = [(keys.bytes_of({"id": f"{run}-{i}", "shard": i % 4}, topics["source"], MessageField.KEY),
             values.bytes_of({"id": f"{run}-{i}", "amount": i % 10 - 1, "created_ms": base + i * 1_000},
                             topics["source"], MessageField.VALUE)) for i in range(n)]
    poison = [(frame(987_654_321, b"\x00\x02\x0a\x01x"), good[0][1]),      # a key of an id the registry lacks
              (good[1][0][:5] + b"\xff\xff", good[1][1])]                   # a key that does not parse
    produce(bootstrap, topics["source"], good[: n // 2] + poison, transactional=unique("keyed-in"))
    produce(bootstrap, topics["source"], good[n // 2:])

    faults, log = tmp_path / "faults", tmp_path / "run.log"
    faults.mkdir()
    doc = keyed_pipeline(tmp_path, schema_registry, fmt, run, topics)
    doc["sink"]["options"] = {"faultInjection": "after_decision@1", "faultInjectionDir": str(faults)}
    path = tmp_path / "keyed.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = start_kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cks", log, env=cli_env(schema_registry))
    try:
        wait_for((faults, "after_decision.*"), proc, 400, log)
    finally:
        kill_group(proc)
    doc["sink"].pop("options")
    path.write_text(yaml.safe_dump(doc))
    result = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cks", env=cli_env(schema_registry))
    assert result.code == 0, result.log()

    out = read_all(bootstrap, topics["sink"])
    rows = [(keys.row_of(m.key(), topics["sink"], MessageField.KEY),
             values.row_of(m.value(), topics["sink"], MessageField.VALUE), m.timestamp()) for m in out]
    kept = [f"{run}-{i}" for i in range(n) if i % 10 - 1 >= 0]
    assert_exactly_once(tally([key["id"] for key, _, _ in rows], kept))
    for key, value, (kind, at) in rows:
        i = int(key["id"].rsplit("-", 1)[1])
        assert value["id"] == key["id"] and key["shard"] == i % 4
        assert kind == TIMESTAMP_CREATE_TIME and at == base + i * 1_000, (key, at)
    key_ids = {int.from_bytes(m.key()[1:5], "big") for m in out}
    assert key_ids == {client(schema_registry).get_latest_version(f"{topics['sink']}-key").schema_id}

    dlq = read_all(bootstrap, topics["dlq"])
    assert sorted(m.key() for m in dlq) == sorted(k for k, _ in poison), "each poison record once, its key as it was"
    source_times = {m.key(): m.timestamp() for m in read_all(bootstrap, topics["source"])}
    for message in dlq:
        error = dict(message.headers())["kafka-eos.error"].decode()
        assert error.startswith("key: "), error
        assert message.timestamp() == source_times[message.key()], "a DLQ record keeps its source record's timestamp"
