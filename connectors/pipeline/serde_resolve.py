"""Driver side: pipeline config -> ``ValueSerde`` for the source and the sink, of values and of keys.

Invariants:
- The subject is the configured one, else named by the registry's strategy
  (``kafka_eos.serde.registry_subjects``: ``<topic>-value`` / ``<topic>-key``, the record name, or both); what each
  format does with the schema settings (reader schema, compiled .proto, checking and registering
  the sink's schema, or writing with a pinned one) is ``kafka_eos.serde.resolve``'s.
"""
from __future__ import annotations

from kafka_eos.config.model import DataFormat, SinkSpec, SourceSpec
from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.resolve import reader_serde, writer_serde

SCHEMA_FORMATS = (DataFormat.JSON, DataFormat.AVRO, DataFormat.PROTOBUF)  # a key of these is decoded / encoded


def source_serde(source: SourceSpec) -> ValueSerde:
    schema = source.schema
    if schema is None:
        return ValueSerde(source.format)
    topic = source.topics[0] if len(source.topics) == 1 else None
    subject = schema.registry.subject if schema.registry else None
    return reader_serde(source.format, schema.text, schema.file, schema.registry, subject, schema.message, topic)


def sink_serde(sink: SinkSpec) -> ValueSerde:
    schema = sink.schema
    if schema is None:
        return ValueSerde(sink.format)
    subject = schema.registry.subject if schema.registry else None
    return writer_serde(sink.format, schema.text, schema.file, schema.registry, subject, schema.message, sink.topic)


def source_key_serde(source: SourceSpec) -> ValueSerde | None:
    """The serde of the source's keys where ``key_format`` has a schema (None: bytes or string)."""
    schema = source.key_schema
    if source.key_format not in SCHEMA_FORMATS or schema is None:
        return None
    topic = source.topics[0] if len(source.topics) == 1 else None
    subject = schema.registry.subject if schema.registry else None
    return reader_serde(source.key_format, schema.text, schema.file, schema.registry, subject, schema.message, topic,
                        field="key")


def sink_key_serde(sink: SinkSpec) -> ValueSerde | None:
    """The serde of the sink's keys where ``key_format`` has one (None: the key column as given)."""
    schema = sink.key_schema
    if sink.key_format not in SCHEMA_FORMATS:
        return None
    if schema is None:
        return ValueSerde(sink.key_format)   # json: any column type is written as is
    subject = schema.registry.subject if schema.registry else None
    return writer_serde(sink.key_format, schema.text, schema.file, schema.registry, subject, schema.message, sink.topic,
                        field="key")
