"""Driver side, per format: the ``ValueSerde`` of a source (reader) or sink (writer) from its schema
settings, as plain data to ship to executors.

Invariants:
- Avro and JSON Schema: the reader schema is the configured text, else the subject's latest
  version, read once when the query starts. Protobuf: the configured .proto compiled here (its
  imports found next to it), else the subject's latest version with its references.
- The subject is ``subject`` when given, else named by the registry's strategy from ``topic`` and
  the schema's record name (``registry_subjects``, the one rule).
- A writer in wire format runs ``registry_compat.check_writer`` first (nothing is written
  otherwise). With ``auto_register`` on it registers its schema under the subject and writes the
  id the registry returns (the existing id when the schema is already there); off, it registers
  nothing and writes with the pinned schema (latest, version or id) and its id.
- ``format: json`` with a registry reads the schema as a JSON Schema; without one, as the
  Avro-style schema that types plain JSON.
"""
from __future__ import annotations

from kafka_eos.serde.codecs import ValueSerde
from kafka_eos.serde.formats import REGISTRY_SCHEMA_TYPES, DataFormat, Registry
from kafka_eos.serde.registry_subjects import needs_record_name, record_name, subject_name


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


def _subject(registry: Registry, subject: str | None, topic: str | None, where: str, fmt: DataFormat,
             text: str | None, file_set: bytes | None = None, message: str | None = None, field: str = "value") -> str:
    if subject:
        return subject
    record = record_name(fmt, text, file_set, message) if needs_record_name(registry) else None
    return subject_name(registry, topic, record, where, field)


def _proto_configured(text: str | None, file: str | None) -> bytes | None:
    from kafka_eos.serde.protobuf_schemas import compile_path, compile_schema
    return compile_path(file) if file else compile_schema(text) if text else None


def reader_serde(fmt: DataFormat, text: str | None, file: str | None, registry: Registry | None,
                 subject: str | None, message: str | None = None, topic: str | None = None,
                 field: str = "value") -> ValueSerde:
    """The source's serde of its values (``field`` value) or keys (``key``: subject ``<topic>-key``)."""
    if fmt is DataFormat.PROTOBUF:
        if registry is not None and not (text or file):
            subject = _subject(registry, subject, topic, "source", fmt, None, None, message, field)
        descriptors, _, _ = _protobuf(text, file, registry, subject or "")
        return ValueSerde(fmt, registry=registry, descriptors=descriptors, message=message)
    if text is None and registry is not None:
        from kafka_eos.serde.registry import RegistrySchemas
        text = RegistrySchemas(registry).latest_text(_subject(registry, subject, topic, "source", fmt, None, field=field))
    return ValueSerde(fmt, text, registry)


def _local_imports(file_set: bytes) -> bool:
    """Whether a compiled .proto imports files other than the well-known types."""
    from google.protobuf import descriptor_pb2
    files = descriptor_pb2.FileDescriptorSet.FromString(file_set).file
    return any(not f.name.startswith("google/protobuf/") for f in files[:-1])


def sink_candidate(fmt: DataFormat, text: str | None, file: str | None, message: str | None,
                   file_set: bytes | None = None):
    """The configured writer schema as ``registry_compat`` checks it (None: none is configured, the
    sink then writes the subject's own; or a .proto importing files of its own, which are registered
    as references first and the registry answers for at registration)."""
    from kafka_eos.serde.registry_compat import Candidate
    if fmt is not DataFormat.PROTOBUF:
        return Candidate(fmt, text) if text else None
    file_set = file_set or _proto_configured(text, file)
    if file_set is None or _local_imports(file_set):
        return None
    if not text and file:
        from pathlib import Path
        text = Path(file).read_text(encoding="utf-8")
    return Candidate(fmt, text or "", file_set, message)


def _pinned_writer(fmt: DataFormat, registry: Registry, subject: str, candidate, message: str | None) -> ValueSerde:
    from kafka_eos.serde.registry_compat import check_writer
    chosen = check_writer(registry, subject, candidate)
    assert chosen is not None   # auto_register off: check_writer returns the pinned schema
    if fmt is not DataFormat.PROTOBUF:
        return ValueSerde(fmt, chosen.schema.schema_str, registry, chosen.schema_id)
    from kafka_eos.serde.protobuf_registry import compile_registered
    descriptors = compile_registered(registry, chosen.schema, f"kafka_eos_schema_{chosen.schema_id}.proto")
    name = candidate.descriptor().full_name if candidate is not None else message
    return ValueSerde(fmt, registry=registry, schema_id=chosen.schema_id, descriptors=descriptors, message=name)


def writer_serde(fmt: DataFormat, text: str | None, file: str | None, registry: Registry | None,
                 subject: str | None, message: str | None = None, topic: str | None = None,
                 field: str = "value") -> ValueSerde:
    """The sink's serde of its values (``field`` value) or keys (``key``: subject ``<topic>-key``)."""
    from kafka_eos.serde.registry import RegistrySchemas
    from kafka_eos.serde.registry_compat import check_writer
    configured = _proto_configured(text, file) if fmt is DataFormat.PROTOBUF else None
    if registry is not None:
        subject = _subject(registry, subject, topic, "sink", fmt, text, configured, message, field)
        candidate = sink_candidate(fmt, text, file, message, configured)
        if registry.pinned:
            return _pinned_writer(fmt, registry, subject, candidate, message)
        check_writer(registry, subject, candidate)
    if fmt is DataFormat.PROTOBUF:
        descriptors, proto_text, references = (configured, text or "", ()) if configured else \
            _protobuf(text, file, registry, subject or "")
        schema_id = None
        if registry is not None and file:
            from kafka_eos.serde.protobuf_registry import register_file
            schema_id = register_file(registry, subject or "", file, descriptors)   # with its imports as references
        elif registry is not None:
            schema_id = RegistrySchemas(registry).register(subject or "", proto_text, "PROTOBUF", references)
        return ValueSerde(fmt, registry=registry, schema_id=schema_id, descriptors=descriptors, message=message)
    schema_id = None
    if registry is not None:
        schemas = RegistrySchemas(registry)
        text = text or schemas.latest_text(subject or "")
        schema_id = schemas.register(subject or "", text, REGISTRY_SCHEMA_TYPES[fmt])
    return ValueSerde(fmt, text, registry, schema_id)
