"""Subject names by strategy, against confluent-kafka's own strategy functions (the reference: what
its serializers register under) and the record names its serializers take."""
from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import (record_subject_name_strategy, topic_record_subject_name_strategy,
                                             topic_subject_name_strategy)
from confluent_kafka.serialization import MessageField, SerializationContext

from kafka_eos.serde.formats import DataFormat, Registry, SubjectStrategy
from kafka_eos.serde.protobuf_schemas import compile_schema
from kafka_eos.serde.registry_subjects import SubjectError, record_name, subject_name

AVRO = json.dumps({"type": "record", "name": "Payment", "namespace": "shop.pay", "fields": []})
JSON_SCHEMA = json.dumps({"title": "shop.Person", "type": "object", "properties": {}})
PROTO = 'syntax = "proto3";\npackage shop;\nmessage Ping { string id = 1; }\nmessage Order { string id = 1; }\n'
THEIRS = {SubjectStrategy.TOPIC: topic_subject_name_strategy, SubjectStrategy.RECORD: record_subject_name_strategy,
          SubjectStrategy.TOPIC_RECORD: topic_record_subject_name_strategy}


def confluent_record_name(fmt: DataFormat, text: str, message: str | None) -> str:
    """The record name Confluent's serializers pass their strategy (as they compute it)."""
    if fmt is DataFormat.AVRO:
        import fastavro
        return fastavro.parse_schema(json.loads(text))["name"]
    if fmt is DataFormat.JSON:
        return json.loads(text)["title"]
    from kafka_eos.serde.protobuf_schemas import ProtoSchema, message_class
    schema = ProtoSchema(compile_schema(text))
    return message_class(schema, message).DESCRIPTOR.full_name   # ProtobufSerializer: message.DESCRIPTOR.full_name


@pytest.mark.parametrize("strategy", list(SubjectStrategy))
@pytest.mark.parametrize("fmt,text,message", [(DataFormat.AVRO, AVRO, None), (DataFormat.JSON, JSON_SCHEMA, None),
                                              (DataFormat.PROTOBUF, PROTO, "shop.Order")])
def test_each_strategy_names_the_subject_as_confluents_serializers_do(strategy, fmt, text, message):
    file_set = compile_schema(text) if fmt is DataFormat.PROTOBUF else None
    ours = subject_name(Registry("http://r", subject_strategy=strategy), "orders",
                        record_name(fmt, text, file_set, message))
    theirs = THEIRS[strategy](SerializationContext("orders", MessageField.VALUE),
                              confluent_record_name(fmt, text, message))
    assert ours == theirs


def test_record_names_by_format():
    assert record_name(DataFormat.AVRO, AVRO) == "shop.pay.Payment"
    assert record_name(DataFormat.AVRO, json.dumps({"type": "record", "name": "a.b.C", "namespace": "x",
                                                    "fields": []})) == "a.b.C", "a dotted name is already full"
    assert record_name(DataFormat.AVRO, '"string"') == "string"
    assert record_name(DataFormat.PROTOBUF, PROTO, compile_schema(PROTO), None) == "shop.Ping", "the file's first"
    assert record_name(DataFormat.JSON, json.dumps({"type": "object"})) is None


def test_a_set_subject_wins_and_a_missing_name_says_which_setting_names_it():
    assert subject_name(Registry("http://r", subject="fixed"), None, None) == "fixed"
    with pytest.raises(SubjectError, match=r"no single topic \(fix: set sink.schema.registry.subject\)"):
        subject_name(Registry("http://r"), None, "x")
    with pytest.raises(SubjectError, match="the record strategy names the subject after the record, and the schema "
                                           "names none"):
        subject_name(Registry("http://r", subject_strategy=SubjectStrategy.RECORD), "orders", None, "source")


def test_describe_shows_how_the_subject_is_named_and_what_the_sink_writes_with():
    assert Registry("http://r").settings_text() == ""
    assert Registry("http://r", subject="fixed").settings_text() == " subject fixed"
    assert Registry("http://r", subject_strategy=SubjectStrategy.TOPIC_RECORD, auto_register=False,
                    use_latest_version=True).settings_text() == \
        " subject_strategy topic_record auto_register off: writes with the latest version"
    assert Registry("http://r", auto_register=False, schema_id=17).settings_text() == \
        " auto_register off: writes with id 17"
