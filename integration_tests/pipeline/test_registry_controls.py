"""Registry controls against a real schema registry (the ``schema_registry`` fixture: Apicurio's
Confluent-compatible API, with basic auth): subject strategies as Confluent's serializers name
them, ``auto_register: false``, the compatibility check at ``validate`` and at the start, and a
registry down at ``validate``.

The independent reference for the subjects is confluent-kafka's own serializers, configured with
its ``topic_subject_name_strategy`` / ``record_subject_name_strategy`` /
``topic_record_subject_name_strategy``: they register where their strategy says; kafka-eos, given
the same schema and strategy, must find that subject (same id, no new version).
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
import yaml
from confluent_kafka.schema_registry import (Schema, record_subject_name_strategy, topic_record_subject_name_strategy,
                                             topic_subject_name_strategy)
from confluent_kafka.serialization import MessageField, SerializationContext

from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.registry_tools import cli_env, client
from kafka_eos.secrets import Secret
from kafka_eos.serde.codecs import decoder, encoder
from kafka_eos.serde.formats import DataFormat, Registry, SubjectStrategy
from kafka_eos.serde.protobuf_schemas import ProtoSchema, compile_schema, message_class
from kafka_eos.serde.registry_compat import SchemaIncompatible
from kafka_eos.serde.registry_subjects import SubjectError
from kafka_eos.serde.resolve import reader_serde, writer_serde

STRATEGIES = {SubjectStrategy.TOPIC: topic_subject_name_strategy, SubjectStrategy.RECORD: record_subject_name_strategy,
              SubjectStrategy.TOPIC_RECORD: topic_record_subject_name_strategy}


def ours(registry, **settings) -> Registry:
    return Registry(registry.url, basic_auth_user_info=Secret(registry.user_info) if registry.user_info else None,
                    **settings)


def avro_schema(run: str, *extra: dict) -> dict:
    return {"type": "record", "name": "Payment", "namespace": f"shop.{run}",
            "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}, *extra]}


def proto(run: str) -> str:
    return (f'syntax = "proto3";\npackage shop.{run};\nmessage Ping {{ string id = 1; }}\n'
            'message Order { string id = 1; int64 amount = 2; }\n')


def json_schema(run: str) -> dict:
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": f"shop.{run}.Person", "type": "object",
            "properties": {"name": {"type": "string"}}, "required": ["name"]}


def confluent_writes(registry, fmt: DataFormat, run: str, topic: str, strategy: SubjectStrategy) -> bytes:
    """One value written by Confluent's serializer of ``fmt`` with ``strategy`` (it registers the schema)."""
    conf = {"auto.register.schemas": True, "subject.name.strategy": STRATEGIES[strategy]}
    context = SerializationContext(topic, MessageField.VALUE)
    if fmt is DataFormat.AVRO:
        from confluent_kafka.schema_registry.avro import AvroSerializer
        return AvroSerializer(client(registry), json.dumps(avro_schema(run)), conf=conf)({"id": "a", "amount": 1.0},
                                                                                        context)
    if fmt is DataFormat.JSON:
        from confluent_kafka.schema_registry.json_schema import JSONSerializer
        return JSONSerializer(json.dumps(json_schema(run)), client(registry), conf=conf)({"name": "n"}, context)
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    cls = message_class(ProtoSchema(compile_schema(proto(run), f"{run}.proto")), f"shop.{run}.Order")
    return ProtobufSerializer(cls, client(registry), {**conf, "use.deprecated.format": False})(cls(id="a", amount=1),
                                                                                                 context)


def configured(fmt: DataFormat, run: str) -> tuple[str, str | None]:
    """(schema text, Protobuf message) kafka-eos is configured with: the same schema."""
    if fmt is DataFormat.PROTOBUF:
        return proto(run), f"shop.{run}.Order"
    return json.dumps(avro_schema(run) if fmt is DataFormat.AVRO else json_schema(run)), None


@pytest.mark.parametrize("strategy", list(SubjectStrategy))
@pytest.mark.parametrize("fmt", [DataFormat.AVRO, DataFormat.PROTOBUF, DataFormat.JSON])
def test_each_strategy_finds_the_subject_confluents_serializer_registered(schema_registry, fmt, strategy):
    run, topic = unique("s").replace("-", "_"), unique("orders")
    registry = client(schema_registry)
    before = set(registry.get_subjects())
    theirs = confluent_writes(schema_registry, fmt, run, topic, strategy)
    (subject,) = set(registry.get_subjects()) - before            # where Confluent's strategy registered
    text, message = configured(fmt, run)
    sink = writer_serde(fmt, text, None, ours(schema_registry, subject_strategy=strategy), None, message, topic)
    assert set(registry.get_subjects()) - before == {subject}, "kafka-eos's subject is Confluent's"
    if fmt is DataFormat.PROTOBUF:   # Confluent's Python client registers a base64 descriptor, kafka-eos the text
        assert registry.get_latest_version(subject).schema_id == sink.schema_id
    else:
        assert sink.schema_id == int.from_bytes(theirs[1:5], "big"), "the same schema under the same subject: its id"
        assert registry.get_versions(subject) == [1], "found, not registered again"
    reading = ours(schema_registry, subject_strategy=strategy)
    if strategy is not SubjectStrategy.TOPIC and fmt is not DataFormat.PROTOBUF:   # no schema names the record
        with pytest.raises(SubjectError, match="names the subject after the record, and the schema names none"):
            reader_serde(fmt, None, None, reading, None, message, topic)
        reading = ours(schema_registry, subject=subject)
    source = reader_serde(fmt, None, None, reading, None, message, topic)
    decoded, errors = decoder(source).decode(pa.array([theirs]))   # the reader schema: that subject's latest
    assert errors == [None] and decoded.to_pylist()[0] in ({"id": "a", "amount": 1.0}, {"id": "a", "amount": 1},
                                                          {"name": "n"})


def test_auto_register_off_writes_with_the_pinned_schema_and_registers_nothing(schema_registry):
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    run, topic = unique("p").replace("-", "_"), unique("payments")
    subject, registry = f"{topic}-value", client(schema_registry)
    v1 = registry.register_schema(subject, Schema(json.dumps(avro_schema(run)), "AVRO"))
    wider = avro_schema(run, {"name": "channel", "type": "string", "default": "web"})
    v2 = registry.register_schema(subject, Schema(json.dumps(wider), "AVRO"))
    latest = ours(schema_registry, auto_register=False, use_latest_version=True)
    sink = writer_serde(DataFormat.AVRO, json.dumps(avro_schema(run)), None, latest, None, topic=topic)
    assert sink.schema_id == v2 != v1
    rows = pa.array([{"id": f"{run}-{i}", "amount": float(i)} for i in range(3)])
    values = encoder(sink).encode(rows).to_pylist()
    assert {int.from_bytes(v[1:5], "big") for v in values} == {v2}
    read = AvroDeserializer(registry)
    context = SerializationContext(topic, MessageField.VALUE)
    assert [read(v, context) for v in values] == [{**r, "channel": "web"} for r in rows.to_pylist()], \
        "Confluent's deserializer reads them with v2, the field the rows lack at its default"
    assert writer_serde(DataFormat.AVRO, None, None, ours(schema_registry, auto_register=False, version=1), None,
                        topic=topic).schema_id == v1
    assert writer_serde(DataFormat.AVRO, None, None, ours(schema_registry, auto_register=False, schema_id=v1), None,
                        topic=topic).schema_id == v1
    dropped = avro_schema(run, {"name": "region", "type": "string"})
    assert writer_serde(DataFormat.AVRO, json.dumps(dropped), None, latest, None, topic=topic).schema_id == v2, \
        "a field the pinned schema lacks is not written (as Confluent's latest.compatibility.strict allows)"
    textual = {**avro_schema(run), "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "string"}]}
    with pytest.raises(SchemaIncompatible, match=r"which cannot write what the configured schema describes: field "
                                                 r"amount: string cannot be read as double \(TYPE_MISMATCH\)"):
        writer_serde(DataFormat.AVRO, json.dumps(textual), None, latest, None, topic=topic)
    assert registry.get_versions(subject) == [1, 2], "nothing registered by any of them"


def registry_pipeline(tmp_path, topic: str, schema: dict, url: str = "${SCHEMA_REGISTRY_URL}"):
    doc = {"version": 1, "name": "registry-controls",
           "source": {"kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}, "topics": [unique("in")],
                      "format": "json", "schema": {"inline": json.dumps(schema)}},
           "sink": {"kafka": {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}, "topic": topic, "format": "avro",
                    "schema": {"inline": json.dumps(schema),
                               "registry": {"url": url, "basic_auth_user_info": "${SCHEMA_REGISTRY_AUTH}"}},
                    "transactional_id_prefix": unique("controls")},
           "checkpoint": {"location": str(tmp_path / "ck"), "trigger": "available_now"}}
    path = tmp_path / "registry-controls.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_an_incompatible_schema_is_refused_at_validate_and_at_the_start_naming_the_field(
        schema_registry, bootstrap, tmp_path):
    run, topic = unique("c").replace("-", "_"), unique("payments")
    subject, registry = f"{topic}-value", client(schema_registry)
    registry.register_schema(subject, Schema(json.dumps(avro_schema(run)), "AVRO"))
    registry.set_compatibility(subject, "BACKWARD")
    changed = avro_schema(run, {"name": "channel", "type": "string"})         # no default: breaks BACKWARD
    path = registry_pipeline(tmp_path, topic, changed)
    for command in (["validate", str(path)], ["run", str(path), "--once"]):
        result = kafka_eos(command, bootstrap, tmp_path, timeout=180, env=cli_env(schema_registry))
        assert result.code == 1, result.log()
        said = result.stdout + result.stderr
        assert f"breaks subject {subject}'s compatibility level BACKWARD against its version 1" in said, said
        assert "field channel: the reader has the field without a default" in said
        assert "(READER_FIELD_MISSING_DEFAULT_VALUE)" in said and "registry-schema-refused-schemaincompatible" in said
    assert registry.get_versions(subject) == [1], "never registered"
    fixed = avro_schema(run, {"name": "channel", "type": "string", "default": "web"})
    result = kafka_eos(["validate", str(registry_pipeline(tmp_path, topic, fixed))], bootstrap, tmp_path, timeout=180,
                       env=cli_env(schema_registry))
    assert result.code == 0, result.log()


def test_a_registry_down_at_validate_is_exit_2_naming_the_registry(schema_registry, bootstrap, tmp_path):
    from kafka_eos.connectors.dev.local_kafka import free_port
    down = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"               # nothing listens there
    path = registry_pipeline(tmp_path, unique("payments"), avro_schema("down"), url=down)
    result = kafka_eos(["validate", str(path)], bootstrap, tmp_path, timeout=180, env=cli_env(schema_registry))
    assert result.code == 2, result.log()
    said = result.stdout + result.stderr
    assert f"sink.schema.registry.url: the schema registry at {down} did not answer" in said, result.log()
    if schema_registry.user_info:
        assert schema_registry.user_info.split(":", 1)[1] not in said


CHANGES = {  # format: (version 1, a change that breaks BACKWARD, the field and rule named)
    DataFormat.JSON: (json.dumps({"type": "object", "properties": {"a": {"type": "string"}},
                                  "additionalProperties": False}),
                      json.dumps({"type": "object", "properties": {"a": {"type": "integer"}},
                                  "additionalProperties": False}), "field a: type ['string'] is read as ['integer'] "
                                                                   "(TYPE_CHANGED)"),
    DataFormat.PROTOBUF: ('syntax = "proto3";\npackage s;\nmessage M { string a = 1; int64 b = 2; }\n',
                          'syntax = "proto3";\npackage s;\nmessage M { string a = 1; string b = 2; }\n',
                          "field b: int64 is read as string (FIELD_SCALAR_KIND_CHANGED)"),
}


@pytest.mark.parametrize("fmt", list(CHANGES))
def test_an_incompatible_json_schema_or_protobuf_change_is_refused_naming_the_field(schema_registry, fmt):
    topic, registry = unique("changes"), client(schema_registry)
    first, changed, named = CHANGES[fmt]
    writer_serde(fmt, first, None, ours(schema_registry), None, "s.M" if fmt is DataFormat.PROTOBUF else None, topic)
    registry.set_compatibility(f"{topic}-value", "BACKWARD")
    with pytest.raises(SchemaIncompatible, match="compatibility level BACKWARD against its version 1") as refused:
        writer_serde(fmt, changed, None, ours(schema_registry), None, "s.M" if fmt is DataFormat.PROTOBUF else None,
                     topic)
    assert named in str(refused.value)
    assert registry.get_versions(f"{topic}-value") == [1]


@pytest.mark.chaos  # a Spark run (7 min at a load of 17-20; make chaos KIND=pipeline); the pinned path is above
def test_a_run_with_topic_record_subjects_and_auto_register_off_writes_the_latest_id_once_each(
        schema_registry, bootstrap, tmp_path):
    """payments-registry.yaml on topics of its own, the sink with ``subject_strategy: topic_record`` and
    ``auto_register: false, use_latest_version: true``: through Spark, every kept id once in the
    read_committed output, each record under the id of the subject's latest version (v2, with a
    field payment.avsc lacks, at its default), and the subject still has its 2 versions."""
    from integration_tests.kafka_tools import assert_exactly_once, produce, read_all, tally
    from integration_tests.pipeline_cli import EXAMPLES
    from integration_tests.registry_tools import PAYMENT, PAYMENT_V2, decode_by_id, payment, register, wire
    from kafka_eos.connectors.demo_data import create_topics
    source, sink = unique("payments"), unique("clean")
    create_topics(bootstrap, {source: 2, sink: 2})
    subject = f"{sink}-{PAYMENT['namespace']}.{PAYMENT['name']}"   # TopicRecordNameStrategy
    register(schema_registry, subject, PAYMENT)
    latest = register(schema_registry, subject, PAYMENT_V2)
    writer = register(schema_registry, f"{source}-value", PAYMENT)
    run, n = unique("pay"), 60
    produce(bootstrap, source, [(f"{run}-{i}".encode(), wire(writer, PAYMENT, payment(run, i, 2))) for i in range(n)],
            transactional=unique("in"))
    doc = yaml.safe_load((EXAMPLES / "payments-registry.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [source], sink
    for side in ("source", "sink"):
        doc[side]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "payment.avsc")
    doc["sink"]["schema"]["registry"] = {**doc["sink"]["schema"]["registry"], "subject_strategy": "topic_record",
                                         "auto_register": False, "use_latest_version": True}
    doc["sink"]["transactional_id_prefix"] = unique("pinned")
    path = tmp_path / "payments-pinned.yaml"
    path.write_text(yaml.safe_dump(doc))

    result = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "ck", env=cli_env(schema_registry))
    assert result.code == 0, result.log()
    decoded = [decode_by_id(schema_registry, m.value()) for m in read_all(bootstrap, sink)]
    assert {schema_id for schema_id, _ in decoded} == {latest}, "each record under the latest version's id"
    assert {r["channel"] for _, r in decoded} == {"web"}, "v2's field payment.avsc lacks, at its default"
    kept = [f"{run}-{i}" for i in range(n) if i % 10 - 1 > 0]
    assert_exactly_once(tally([r["payment_id"] for _, r in decoded], kept))
    assert client(schema_registry).get_versions(subject) == [1, 2], "the sink registered nothing"
    assert client(schema_registry).get_subjects().count(f"{sink}-value") == 0
