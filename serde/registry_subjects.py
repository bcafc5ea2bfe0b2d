"""The subject a schema is looked up or registered under: the one rule, for the source and the sink.

Invariants (Confluent's serializers name subjects so; ``confluent_kafka.schema_registry``'s
``topic_subject_name_strategy``, ``record_subject_name_strategy`` and
``topic_record_subject_name_strategy`` are the reference the tests compare with):
- ``registry.subject`` set is the subject as written, whatever the strategy;
- ``topic``: ``<topic>-<field>`` (``field`` is ``value``; ``key`` for a key's schema);
- ``record``: the record name; ``topic_record``: ``<topic>-<record name>``;
- the record name is the schema's: Avro's full name (``namespace.name``; a primitive's type),
  Protobuf's message full name (``package.Message``), a JSON Schema's ``title``.
A subject that cannot be named (no single topic, no record name) is ``SubjectError`` saying which
setting names it.
"""
from __future__ import annotations

import json

from kafka_eos import KafkaEosError
from kafka_eos.serde.formats import DataFormat, Registry, SubjectStrategy


class SubjectError(KafkaEosError, ValueError):
    """A schema's subject cannot be named from the settings given."""


def avro_record_name(text: str) -> str | None:
    """An Avro schema's full name (``namespace.name``), a primitive's type; None for a union."""
    document = json.loads(text)
    if isinstance(document, str):
        return document
    if not isinstance(document, dict):
        return None
    name, namespace = document.get("name"), document.get("namespace")
    if not name:
        return document.get("type") if isinstance(document.get("type"), str) else None
    return name if "." in name or not namespace else f"{namespace}.{name}"


def json_schema_record_name(text: str) -> str | None:
    """A JSON Schema's ``title`` (what Confluent's ``JSONSerializer`` takes as the record name)."""
    document = json.loads(text)
    title = document.get("title") if isinstance(document, dict) else None
    return title if isinstance(title, str) and title else None


def protobuf_record_name(file_set: bytes, message: str | None) -> str:
    """The full name of the configured message (default: the file's first)."""
    from kafka_eos.serde.protobuf_schemas import ProtoSchema
    return ProtoSchema(file_set).message(message).full_name


def record_name(fmt: DataFormat, text: str | None, file_set: bytes | None = None, message: str | None = None) -> str | None:
    """The record name of a schema of ``fmt`` (None when it has none, or no schema is given)."""
    if fmt is DataFormat.PROTOBUF:
        return protobuf_record_name(file_set, message) if file_set else message
    if not text:
        return None
    return json_schema_record_name(text) if fmt is DataFormat.JSON else avro_record_name(text)


def needs_record_name(registry: Registry) -> bool:
    return registry.subject is None and registry.subject_strategy is not SubjectStrategy.TOPIC


def schema_at(side: str, field: str = "value") -> str:
    """The YAML key of ``side``'s (``source``, ``sink``) schema of its values or (``field`` key) keys."""
    return f"{side}.schema" if field == "value" else f"{side}.key_schema"


def subject_name(registry: Registry, topic: str | None, record: str | None, where: str = "sink",
                 field: str = "value") -> str:
    """The subject of a schema of ``record`` (its name) on ``topic`` under ``registry``'s strategy."""
    if registry.subject:
        return registry.subject
    strategy, at = registry.subject_strategy, schema_at(where, field)
    if strategy is not SubjectStrategy.RECORD and not topic:
        raise SubjectError(f"{at}.registry: the {strategy.value} strategy names the subject after "
                           f"the topic, and there is no single topic (fix: set {at}.registry.subject)")
    if strategy is SubjectStrategy.TOPIC:
        return f"{topic}-{field}"
    if not record:
        raise SubjectError(f"{at}.registry: the {strategy.value} strategy names the subject after "
                           "the record, and the schema names none (fix: give the schema as file or inline "
                           "(a JSON Schema with a title; for protobuf, or the message), or set "
                           f"{at}.registry.subject)")
    return record if strategy is SubjectStrategy.RECORD else f"{topic}-{record}"
