"""Driver side: pipeline config -> ``ValueSerde`` for the source and the sink.

Invariants:
- The subject is the configured one, else named by the registry's strategy
  (``kafka_eos.serde.registry_subjects``: ``<topic>-value``, the record name, or both); what each
  format does with the schema settings (reader schema, compiled .proto, checking and registering
  the sink's schema, or writing with a pinned one) is ``kafka_eos.serde.resolve``'s.
"""
from __future__ import annotations

from kafka_eos.config.model import SinkSpec, SourceSpec
from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.resolve import reader_serde, writer_serde


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
