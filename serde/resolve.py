"""Driver side, per format: the ``ValueSerde`` of a source (reader) or sink (writer) from its schema
settings, as plain data to ship to executors.

Invariants:
- Avro and JSON Schema: the reader schema is the configured text, else the subject's latest
  version, read once when the query starts. Protobuf: the configured .proto compiled here (its
  imports found next to it), else the subject's latest version with its references.
- A writer in wire format registers its schema under the subject and writes the id the
  registry returns (the existing id when the schema is already there).
- ``format: json`` with a registry reads the schema as a JSON Schema; without one, as the
  Avro-style schema that types plain JSON.
"""
from __future__ import annotations

from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.formats import REGISTRY_SCHEMA_TYPES, DataFormat, Registry


def _protobuf(text: str | None, file: str | None, registry: Registry | None, subject: str) -> tuple[bytes, str, tuple]:
    """(compiled schema, its .proto text, its registry references)."""
    from kafka_eos.serde.protobuf_schemas import compile_path, compile_schema
    if file:
        return compile_path(file), text or "", ()
    if text:
        return compile_schema(text), text, ()
    if registry is None:
        raise ValueError("format protobuf needs a .proto file, inline schema or registry")
    from kafka_eos.serde.protobuf_registry import latest_file_set
    return latest_file_set(registry, subject)


def reader_serde(fmt: DataFormat, text: str | None, file: str | None, registry: Registry | None,
                 subject: str, message: str | None = None) -> ValueSerde:
    if fmt is DataFormat.PROTOBUF:
        descriptors, _, _ = _protobuf(text, file, registry, subject)
        return ValueSerde(fmt, registry=registry, descriptors=descriptors, message=message)
    if text is None and registry is not None:
        from kafka_eos.serde.registry import RegistrySchemas
        text = RegistrySchemas(registry).latest_text(subject)
    return ValueSerde(fmt, text, registry)


def writer_serde(fmt: DataFormat, text: str | None, file: str | None, registry: Registry | None,
                 subject: str, message: str | None = None) -> ValueSerde:
    from kafka_eos.serde.registry import RegistrySchemas
    if fmt is DataFormat.PROTOBUF:
        descriptors, proto_text, references = _protobuf(text, file, registry, subject)
        schema_id = None
        if registry is not None and file:
            from kafka_eos.serde.protobuf_registry import register_file
            schema_id = register_file(registry, subject, file, descriptors)   # with its imports as references
        elif registry is not None:
            schema_id = RegistrySchemas(registry).register(subject, proto_text, "PROTOBUF", references)
        return ValueSerde(fmt, registry=registry, schema_id=schema_id, descriptors=descriptors, message=message)
    schema_id = None
    if registry is not None:
        schemas = RegistrySchemas(registry)
        text = text or schemas.latest_text(subject)
        schema_id = schemas.register(subject, text, REGISTRY_SCHEMA_TYPES[fmt])
    return ValueSerde(fmt, text, registry, schema_id)
