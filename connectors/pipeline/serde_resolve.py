"""Driver side: pipeline config -> ``ValueSerde`` for the source and the sink.

Invariants:
- The reader schema is the configured file/inline schema; with only a registry it is the
  latest version of the subject (default ``<topic>-value``), read once when the query starts.
- The sink's wire-format id is the configured schema registered under the subject (the
  registry returns the existing id when it is already there).
"""
from __future__ import annotations

from kafka_eos.config.model import SchemaRef, SinkSpec, SourceSpec
from kafka_eos.serde.codecs import ValueSerde


def default_subject(topic: str | None) -> str | None:
    return f"{topic}-value" if topic else None


def _subject(schema: SchemaRef, topic: str | None, where: str) -> str:
    subject = (schema.registry.subject if schema.registry else None) or default_subject(topic)
    if not subject:
        raise ValueError(f"{where}.schema.registry.subject is needed (no single topic to derive <topic>-value from)")
    return subject


def source_serde(source: SourceSpec) -> ValueSerde:
    schema = source.schema
    if schema is None:
        return ValueSerde(source.format)
    text = schema.text
    if text is None and schema.registry is not None:
        from kafka_eos.serde.registry import RegistrySchemas
        topic = source.topics[0] if len(source.topics) == 1 else None
        text = RegistrySchemas(schema.registry).latest_text(_subject(schema, topic, "source"))
    return ValueSerde(source.format, text, schema.registry)


def sink_serde(sink: SinkSpec) -> ValueSerde:
    schema = sink.schema
    if schema is None:
        return ValueSerde(sink.format)
    text, schema_id = schema.text, None
    if schema.registry is not None:
        from kafka_eos.serde.registry import RegistrySchemas
        registry = RegistrySchemas(schema.registry)
        subject = _subject(schema, sink.topic, "sink")
        text = text or registry.latest_text(subject)
        schema_id = registry.register(subject, text)
    return ValueSerde(sink.format, text, schema.registry, schema_id)
