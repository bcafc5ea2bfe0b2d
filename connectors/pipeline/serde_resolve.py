"""Driver side: pipeline config -> ``ValueSerde`` for the source and the sink, of values and of keys.

Invariants:
- The subject is the configured one, else named by the registry's strategy
  (``kafka_eos.serde.registry_subjects``: ``<topic>-value`` / ``<topic>-key``, the record name, or both); what each
  format does with the schema settings (reader schema, compiled .proto, checking and registering
  the sink's schema, or writing with a pinned one) is ``kafka_eos.serde.resolve``'s.
"""
from __future__ import annotations

from kafka_eos.config.model import DataFormat, SchemaRef, SinkSpec, SourceSpec
from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.formats import SCHEMA_FORMATS
from kafka_eos.serde.resolve import reader_serde, writer_serde


def _reader(fmt: DataFormat, schema: SchemaRef | None, topics: tuple[str, ...], field: str) -> ValueSerde:
    if schema is None:
        return ValueSerde(fmt)
    topic = topics[0] if len(topics) == 1 else None
    subject = schema.registry.subject if schema.registry else None
    return reader_serde(fmt, schema.text, schema.file, schema.registry, subject, schema.message, topic, field=field)


def _writer(fmt: DataFormat, schema: SchemaRef | None, topic: str | None, field: str) -> ValueSerde:
    if schema is None:
        return ValueSerde(fmt)   # json: any column type is written as is
    subject = schema.registry.subject if schema.registry else None
    return writer_serde(fmt, schema.text, schema.file, schema.registry, subject, schema.message, topic, field=field)


def source_serde(source: SourceSpec) -> ValueSerde:
    return _reader(source.format, source.schema, source.topics, "value")


def sink_serde(sink: SinkSpec) -> ValueSerde:
    return _writer(sink.format, sink.schema, sink.topic, "value")


def source_key_serde(source: SourceSpec) -> ValueSerde | None:
    """The serde of the source's keys where ``key_format`` has a schema (None: bytes or string)."""
    if source.key_format not in SCHEMA_FORMATS or source.key_schema is None:
        return None
    return _reader(source.key_format, source.key_schema, source.topics, "key")


def sink_key_serde(sink: SinkSpec) -> ValueSerde | None:
    """The serde of the sink's keys where ``key_format`` has one (None: the key column as given)."""
    if sink.key_format not in SCHEMA_FORMATS:
        return None
    return _writer(sink.key_format, sink.key_schema, sink.topic, "key")
