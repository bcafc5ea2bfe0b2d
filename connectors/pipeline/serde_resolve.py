"""Driver side: pipeline config -> ``ValueSerde`` for the source and the sink.

Invariants:
- The subject is the configured one, else ``<topic>-value``; what each format does with the
  schema settings (reader schema, compiled .proto, registering the sink's schema) is
  ``kafka_eos.serde.resolve``'s.
"""
from __future__ import annotations

from kafka_eos.config.model import SchemaRef, SinkSpec, SourceSpec
from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.resolve import reader_serde, writer_serde


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
    topic = source.topics[0] if len(source.topics) == 1 else None
    needs_subject = schema.registry is not None and schema.text is None   # the reader schema is the latest
    subject = _subject(schema, topic, "source") if needs_subject else ""
    return reader_serde(source.format, schema.text, schema.file, schema.registry, subject, schema.message)


def sink_serde(sink: SinkSpec) -> ValueSerde:
    schema = sink.schema
    if schema is None:
        return ValueSerde(sink.format)
    subject = _subject(schema, sink.topic, "sink") if schema.registry is not None else ""
    return writer_serde(sink.format, schema.text, schema.file, schema.registry, subject, schema.message)
