"""Protobuf and JSON Schema in the Confluent wire format against a real schema registry (the
``schema_registry`` fixture: Apicurio's Confluent-compatible API, with basic auth).

The independent encoder is confluent-kafka's own ``ProtobufSerializer`` / ``JSONSerializer``
(they register their schemas themselves): kafka-eos's encoder must write the same bytes under the
same id, kafka-eos must decode what they wrote, and Confluent's deserializer must read kafka-eos's.
"""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest
from confluent_kafka.serialization import MessageField, SerializationContext

from integration_tests.kafka_tools import unique
from integration_tests.registry_tools import client
from kafka_eos.secrets import Secret
from kafka_eos.serde.codecs import ValueSerde, decoder, encoder
from kafka_eos.serde.formats import DataFormat, Registry
from kafka_eos.serde.protobuf_schemas import ProtoSchema, compile_schema, message_class
from kafka_eos.serde.protobuf_types import message_type
from kafka_eos.serde.protobuf_wire import unframe
from kafka_eos.serde.resolve import reader_serde, writer_serde

ORDER = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Ping { string id = 1; }
message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  int64 amount = 2;
  Status status = 3;
  repeated Line lines = 4;
  map<string, int64> tags = 5;
  oneof pay { string card = 6; string iban = 7; }
  google.protobuf.Timestamp at = 8;
  google.protobuf.Int64Value maybe = 9;
  repeated string notes = 10;
}
"""
AT = dt.datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=dt.timezone.utc)
PERSON = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
          "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                         "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["name"]}


def ours(registry) -> Registry:
    return Registry(registry.url, None, Secret(registry.user_info) if registry.user_info else None)


def order_row(i: int) -> dict:
    return {"id": f"o-{i}", "amount": i * 100 - 50, "status": "PAID" if i % 2 else "NEW",
            "lines": [{"sku": f"s{i}", "qty": i}], "tags": {"k": i}, "card": None if i % 2 else f"4111-{i}",
            "iban": f"DE{i}" if i % 2 else None, "at": AT + dt.timedelta(seconds=i), "maybe": None if i % 3 else i,
            "notes": ["x"] * (i % 3)}


def order_message(cls, row: dict):
    message = cls(id=row["id"], amount=row["amount"], status=1 if row["status"] == "PAID" else 0, notes=row["notes"])
    for line in row["lines"]:
        message.lines.add(**line)
    message.tags.update(row["tags"])
    if row["card"] is not None:
        message.card = row["card"]
    if row["iban"] is not None:
        message.iban = row["iban"]
    message.at.FromDatetime(row["at"])
    if row["maybe"] is not None:
        message.maybe.value = row["maybe"]
    return message


def test_protobuf_bytes_equal_confluents_serializer_and_each_side_reads_the_other(schema_registry):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    topic = unique("orders-pb")
    file_set = compile_schema(ORDER, "shop/order.proto")
    cls = message_class(ProtoSchema(file_set), "shop.Order")
    serializer = ProtobufSerializer(cls, client(schema_registry), {"auto.register.schemas": True})
    context = SerializationContext(topic, MessageField.VALUE)
    rows = [order_row(i) for i in range(12)]
    theirs = [serializer(order_message(cls, row), context) for row in rows]
    schema_id, indexes, _ = unframe(theirs[0])
    assert indexes == (1,), "Order is the file's second message"

    registry = ours(schema_registry)
    t = message_type(ProtoSchema(file_set).message("shop.Order"))
    mine = encoder(ValueSerde(DataFormat.PROTOBUF, registry=registry, schema_id=schema_id, descriptors=file_set,
                              message="shop.Order")).encode(pa.array(rows, t)).to_pylist()
    assert mine == theirs, "the same bytes as Confluent's serializer, header, message indexes and body"

    reading = ValueSerde(DataFormat.PROTOBUF, registry=registry, descriptors=file_set, message="shop.Order")
    decoded, errors = decoder(reading).decode(pa.array(theirs))   # the writer schema as Confluent registered it
    assert errors == [None] * len(rows) and decoded.to_pylist() == pa.array(rows, t).to_pylist()

    deserializer = ProtobufDeserializer(cls, {"use.deprecated.format": False}, client(schema_registry))
    assert [deserializer(value, context) for value in mine] == [order_message(cls, row) for row in rows]


def test_a_proto_registered_as_text_is_written_and_read_back_through_the_registry(schema_registry):
    """kafka-eos's own path: the sink registers the .proto text under <topic>-value, the source reads the
    subject's latest (compiled with its well-known imports) and each record's writer by id."""
    topic, registry = unique("orders-text"), ours(schema_registry)
    sink = writer_serde(DataFormat.PROTOBUF, ORDER, None, registry, f"{topic}-value", "shop.Order")
    latest = client(schema_registry).get_latest_version(f"{topic}-value")
    assert (latest.schema_id, latest.schema.schema_type) == (sink.schema_id, "PROTOBUF")
    source = reader_serde(DataFormat.PROTOBUF, None, None, registry, f"{topic}-value", "shop.Order")
    rows = [order_row(i) for i in range(5)]
    t = decoder(source).arrow_type
    values = encoder(sink).encode(pa.array(rows, t))
    unknown = values[0].as_py()[:1] + (987_654_321).to_bytes(4, "big") + values[0].as_py()[5:]
    decoded, errors = decoder(source).decode(pa.concat_arrays([values, pa.array([unknown], pa.binary())]))
    assert decoded.to_pylist()[:5] == pa.array(rows, t).to_pylist() and errors[:5] == [None] * 5
    assert errors[5].startswith("unknown schema id 987654321: not in the schema registry at")


def test_json_schema_bytes_equal_confluents_serializer_and_each_side_reads_the_other(schema_registry):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    topic, registry = unique("people-json"), ours(schema_registry)
    serializer = JSONSerializer(json.dumps(PERSON), client(schema_registry), conf={"auto.register.schemas": True})
    context = SerializationContext(topic, MessageField.VALUE)
    people = [{"name": f"p{i}", "age": i, "tags": ["a"] * (i % 2)} for i in range(6)]
    theirs = [serializer(person, context) for person in people]
    schema_id = int.from_bytes(theirs[0][1:5], "big")

    sink = writer_serde(DataFormat.JSON, json.dumps(PERSON), None, registry, f"{topic}-value")
    assert sink.schema_id == schema_id, "the same schema text gets the id Confluent's serializer registered"
    t = decoder(reader_serde(DataFormat.JSON, json.dumps(PERSON), None, registry, "")).arrow_type
    mine = encoder(sink).encode(pa.array(people, t)).to_pylist()
    assert mine == theirs

    reading = reader_serde(DataFormat.JSON, None, None, registry, f"{topic}-value")
    invalid = theirs[0][:5] + b'{"age":-3}'
    decoded, errors = decoder(reading).decode(pa.array(theirs + [invalid]))
    assert decoded.to_pylist()[:6] == people and errors[:6] == [None] * 6
    assert errors[6].startswith(f"does not match JSON Schema id {schema_id}: (value): 'name' is a required property")
    deserializer = JSONDeserializer(json.dumps(PERSON), schema_registry_client=client(schema_registry))
    assert [deserializer(value, context) for value in mine] == people


PIPELINE_PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";

message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  int64 amount = 2;
  uint64 big = 3;
  Status status = 4;
  repeated Line lines = 5;
  map<string, int64> tags = 6;
  oneof pay { string card = 7; string iban = 8; }
  google.protobuf.Timestamp at = 9;
  google.protobuf.Duration took = 10;
  google.protobuf.Int64Value maybe = 11;
}
"""


def protobuf_pipeline(tmp_path, registry, topics: dict[str, str]):
    """Protobuf values both ways through the registry: the source reads the subject's latest (as
    Confluent's serializer registered it), the sink registers order.proto under <sink>-value."""
    import yaml
    proto = tmp_path / "order.proto"
    proto.write_text(PIPELINE_PROTO)
    reg = {"url": registry.url, "basic_auth_user_info": registry.user_info or ""}
    doc = {
        "version": 1, "name": "orders-protobuf",
        "source": {"kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}, "topics": [topics["source"]],
                   "starting_offsets": "earliest", "format": "protobuf", "schema": {"registry": reg}},
        "transform": {"steps": [{"filter": "value.amount > 0"}, {"select": ["value.id AS key", "value AS value"]}]},
        "sink": {"kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}, "topic": topics["sink"],
                 "format": "protobuf", "schema": {"file": str(proto), "registry": reg},
                 "transactional_id_prefix": unique("orders-pb")},
        "checkpoint": {"location": str(tmp_path / "ck"), "trigger": "available_now"},
        "errors": {"on_decode_error": "dlq", "dlq_topic": topics["dlq"]},
    }
    path = tmp_path / "orders-protobuf.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def pipeline_order(cls, run: str, i: int):
    message = cls(id=f"{run}-{i}", amount=i % 10 - 1, big=2**64 - 1 - i, status=i % 2)
    message.lines.add(sku=f"s{i}", qty=i)
    message.tags["n"] = i
    if i % 2:
        message.card = f"4111-{i}"
    message.at.FromDatetime(AT + dt.timedelta(seconds=i))
    message.took.FromTimedelta(dt.timedelta(milliseconds=i))
    if i % 3:
        message.maybe.value = i
    return message


@pytest.mark.chaos  # a Spark run of about a minute (make chaos KIND=pipeline); the bytes are checked above in make test
def test_protobuf_values_through_a_pipeline_once_each_and_an_unknown_id_in_the_dlq(bootstrap, schema_registry, tmp_path):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from kafka_eos.connectors.demo_data import create_topics
    from integration_tests.kafka_tools import assert_exactly_once, produce, read_all, tally
    from integration_tests.pipeline_cli import kafka_eos
    from integration_tests.registry_tools import cli_env
    from kafka_eos.serde.protobuf_wire import frame
    topics = {"source": unique("orders-pb-in"), "sink": unique("orders-pb-out"), "dlq": unique("orders-pb-dlq")}
    create_topics(bootstrap, {topics["source"]: 2, topics["sink"]: 2, topics["dlq"]: 1})
    cls = message_class(ProtoSchema(compile_schema(PIPELINE_PROTO, "order.proto")), "shop.Order")
    serializer = ProtobufSerializer(cls, client(schema_registry), {"auto.register.schemas": True})
    context = SerializationContext(topics["source"], MessageField.VALUE)
    run, n = unique("o"), 300
    good = [(f"{run}-{i}".encode(), serializer(pipeline_order(cls, run, i), context)) for i in range(n)]
    poison = [(f"{run}-bad-{i}".encode(), frame(987_654_321, (0,), pipeline_order(cls, run, 1000 + i).SerializeToString()))
              for i in range(3)]
    produce(bootstrap, topics["source"], good[: n // 2] + poison, transactional=unique("pb-in"))
    produce(bootstrap, topics["source"], good[n // 2:])

    result = kafka_eos(["run", str(protobuf_pipeline(tmp_path, schema_registry, topics)), "--once"], bootstrap,
                       tmp_path / "cks", env=cli_env(schema_registry))
    assert result.code == 0, result.log()

    sink_id = client(schema_registry).get_latest_version(f"{topics['sink']}-value").schema_id
    out = read_all(bootstrap, topics["sink"])
    reading = ValueSerde(DataFormat.PROTOBUF, registry=ours(schema_registry),
                         descriptors=compile_schema(PIPELINE_PROTO, "order.proto"), message="shop.Order")
    decoded, errors = decoder(reading).decode(pa.array([m.value() for m in out], pa.binary()))
    assert errors == [None] * len(out) and {unframe(m.value())[0] for m in out} == {sink_id}
    kept = [f"{run}-{i}" for i in range(n) if i % 10 - 1 > 0]
    assert_exactly_once(tally([row["id"] for row in decoded.to_pylist()], kept))
    by_id = {row["id"]: row for row in decoded.to_pylist()}
    sample = by_id[f"{run}-7"]
    assert (sample["big"], sample["status"], sample["card"], sample["took"]) == (2**64 - 8, "PAID", "4111-7",
                                                                                dt.timedelta(milliseconds=7))
    assert sample["at"] == AT + dt.timedelta(seconds=7) and sample["maybe"] == 7 and sample["tags"] == [("n", 7)]
    assert by_id[f"{run}-3"]["maybe"] is None, "an unset wrapper stays null through Spark and back"

    dlq = read_all(bootstrap, topics["dlq"])
    assert sorted(m.key() for m in dlq) == sorted(k for k, _ in poison)
    offsets = {k: None for k, _ in poison}
    for message in dlq:
        headers = {k: v.decode() for k, v in message.headers()}
        assert message.value() == dict(poison)[message.key()], "the DLQ keeps the original bytes"
        assert headers["kafka-eos.error"].startswith("unknown schema id 987654321: not in the schema registry at")
        assert headers["kafka-eos.source.topic"] == topics["source"]
        offsets[message.key()] = (int(headers["kafka-eos.source.partition"]), int(headers["kafka-eos.source.offset"]))
    source = {m.key(): (m.partition(), m.offset()) for m in read_all(bootstrap, topics["source"])}
    assert offsets == {k: source[k] for k in offsets}, "the DLQ names each poison record's partition and offset"


def test_a_proto_file_is_registered_with_its_imports_as_references(schema_registry, tmp_path):
    """The sink's .proto imports a file next to it: that file is registered under its import path and
    referenced; a reader by id compiles the schema with it and reads the values."""
    topic, registry = unique("pay-refs"), ours(schema_registry)
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "money.proto").write_text('syntax = "proto3";\npackage common;\n'
                                                     "message Money { int64 cents = 1; string currency = 2; }\n")
    (tmp_path / "pay.proto").write_text('syntax = "proto3";\npackage pay;\nimport "common/money.proto";\n'
                                        "message Pay { string id = 1; common.Money amount = 2; }\n")
    sink = writer_serde(DataFormat.PROTOBUF, None, str(tmp_path / "pay.proto"), registry, f"{topic}-value")
    registered = client(schema_registry).get_schema(sink.schema_id)
    assert [(r.name, r.subject) for r in registered.references] == [("common/money.proto", "common/money.proto")]
    rows = [{"id": f"p{i}", "amount": {"cents": i, "currency": "EUR"}} for i in range(3)]
    values = encoder(sink).encode(pa.array(rows, decoder(sink).arrow_type))
    source = reader_serde(DataFormat.PROTOBUF, None, None, registry, f"{topic}-value")
    decoded, errors = decoder(source).decode(values)
    assert decoded.to_pylist() == rows and errors == [None] * 3


@pytest.mark.chaos  # a Spark run of about a minute (make chaos KIND=pipeline)
def test_json_schema_values_through_a_pipeline_once_each_and_invalid_ones_in_the_dlq(bootstrap, schema_registry, tmp_path):
    """format: json with schema.registry both ways: documents written by confluent-kafka's JSONSerializer,
    validated against their writer schema by id; one that breaks it goes to the DLQ with the rule it breaks."""
    import yaml
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from kafka_eos.connectors.demo_data import create_topics
    from integration_tests.kafka_tools import assert_exactly_once, produce, read_all, tally
    from integration_tests.pipeline_cli import kafka_eos
    from integration_tests.registry_tools import cli_env
    from kafka_eos.serde.wire_format import frame
    topics = {"source": unique("people-in"), "sink": unique("people-out"), "dlq": unique("people-dlq")}
    create_topics(bootstrap, {topics["source"]: 2, topics["sink"]: 2, topics["dlq"]: 1})
    serializer = JSONSerializer(json.dumps(PERSON), client(schema_registry), conf={"auto.register.schemas": True})
    context = SerializationContext(topics["source"], MessageField.VALUE)
    run, n = unique("p"), 200
    good = [(f"{run}-{i}".encode(), serializer({"name": f"{run}-{i}", "age": i, "tags": ["t"] * (i % 3)}, context))
            for i in range(n)]
    schema_id = int.from_bytes(good[0][1][1:5], "big")
    invalid = [(f"{run}-bad-{i}".encode(), frame(schema_id, json.dumps({"age": -i}).encode())) for i in range(1, 3)]
    produce(bootstrap, topics["source"], good + invalid, transactional=unique("people"))
    schema_file = tmp_path / "person.json"
    schema_file.write_text(json.dumps(PERSON))
    reg = {"url": schema_registry.url, "basic_auth_user_info": schema_registry.user_info or ""}
    doc = {"version": 1, "name": "people-json-schema",
           "source": {"kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}, "topics": [topics["source"]],
                      "starting_offsets": "earliest", "format": "json", "schema": {"registry": reg}},
           "transform": {"steps": [{"filter": "value.age % 2 = 0"}, {"select": ["value.name AS key", "value AS value"]}]},
           "sink": {"kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}, "topic": topics["sink"], "format": "json",
                    "schema": {"file": str(schema_file), "registry": reg}, "transactional_id_prefix": unique("people")},
           "checkpoint": {"location": str(tmp_path / "ck"), "trigger": "available_now"},
           "errors": {"on_decode_error": "dlq", "dlq_topic": topics["dlq"]}}
    path = tmp_path / "people.yaml"
    path.write_text(yaml.safe_dump(doc))

    result = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cks", env=cli_env(schema_registry))
    assert result.code == 0, result.log()
    sink_id = client(schema_registry).get_latest_version(f"{topics['sink']}-value").schema_id
    out = read_all(bootstrap, topics["sink"])
    assert {int.from_bytes(m.value()[1:5], "big") for m in out} == {sink_id}
    people = [json.loads(m.value()[5:]) for m in out]
    assert_exactly_once(tally([p["name"] for p in people], [f"{run}-{i}" for i in range(0, n, 2)]))
    assert {p["name"]: p["tags"] for p in people}[f"{run}-4"] == ["t"]
    dlq = read_all(bootstrap, topics["dlq"])
    assert sorted(m.key() for m in dlq) == sorted(k for k, _ in invalid)
    for message in dlq:
        error = dict(message.headers())["kafka-eos.error"].decode()
        assert error.startswith(f"does not match JSON Schema id {schema_id}: (value): 'name' is a required property"), error
