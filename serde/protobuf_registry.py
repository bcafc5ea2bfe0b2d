"""Protobuf schemas from a schema registry: by id (executors) and by subject (driver).

Invariants:
- A schema's references (its imports) are fetched by subject and version, recursively, and
  compiled with it; a schema id is compiled once per Python worker (ids are immutable).
- A .proto file the sink registers goes with its imports: each one not well-known is registered
  first under its import path as subject (Confluent's serializers' convention), bottom-up, and
  referenced by that subject and version.
- Lookup failures are sorted as for Avro (``registry.fetch``): 404 is the record's
  ``UnknownSchemaId``, anything else ``WriterSchemaUnavailable``; a schema of another type is
  the record's error too.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

from kafka_eos.serde.avro_serde import UnknownSchemaId
from kafka_eos.serde.formats import Registry
from kafka_eos.serde.protobuf_schemas import ProtoSchema, compile_schema
from kafka_eos.serde.registry import _client, _registry_module, fetch, version_text

MAX_REFERENCES = 200   # a cycle or a runaway chain of references stops here


def _imports(registry: Registry, references: Any, into: dict[str, str]) -> dict[str, str]:
    """name -> .proto text of every schema ``references`` name, and of theirs."""
    for ref in references or ():
        if ref.name in into:
            continue
        if len(into) >= MAX_REFERENCES:
            raise ValueError(f"more than {MAX_REFERENCES} schema references: a cycle?")
        registered = version_text(registry, ref.subject, ref.version)
        into[ref.name] = registered.schema.schema_str
        _imports(registry, registered.schema.references, into)
    return into


def compile_registered(registry: Registry, schema: Any, name: str) -> bytes:
    """The compiled FileDescriptorSet of a registry ``Schema`` (its references resolved)."""
    imports = _imports(registry, schema.references, {})
    return compile_schema(schema.schema_str, name, imports)


def latest_file_set(registry: Registry, subject: str) -> tuple[bytes, str, tuple]:
    """(compiled schema, its text, its references) of the subject's latest version (driver side)."""
    registered = version_text(registry, subject, "latest")
    schema = registered.schema
    return (compile_registered(registry, schema, f"{subject}.proto"), schema.schema_str,
            tuple(schema.references or ()))


def register_file(registry: Registry, subject: str, path: str, file_set: bytes) -> int:
    """The id of the .proto file at ``path`` (compiled as ``file_set``) under ``subject``, its imports
    registered first as schema references."""
    module, client = _registry_module(), _client(registry)
    files = descriptor_pb2.FileDescriptorSet.FromString(file_set).file
    base, versions = Path(path).resolve().parent, dict[str, int]()

    def schema(proto: descriptor_pb2.FileDescriptorProto, text: str) -> Any:
        references = [module.SchemaReference(d, d, versions[d]) for d in proto.dependency if d in versions]
        return module.Schema(text, "PROTOBUF", references)
    for proto in files[:-1]:
        if not proto.name.startswith("google/protobuf/"):
            imported = schema(proto, (base / proto.name).read_text(encoding="utf-8"))
            client.register_schema(proto.name, imported)
            versions[proto.name] = client.lookup_schema(proto.name, imported).version
    return client.register_schema(subject, schema(files[-1], Path(path).read_text(encoding="utf-8")))


class ProtobufSchemas:
    """Writer schemas by id (callable), compiled once per Python worker; picklable."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._by_id = functools.lru_cache(maxsize=128)(self._fetch)

    def _fetch(self, schema_id: int) -> ProtoSchema:
        schema = fetch(self.registry, schema_id)
        if schema.schema_type != "PROTOBUF":
            raise UnknownSchemaId(f"schema id {schema_id} is a {schema.schema_type or 'AVRO'} schema, not Protobuf")
        return ProtoSchema(compile_registered(self.registry, schema, f"kafka_eos_schema_{schema_id}.proto"))

    def __call__(self, schema_id: int) -> ProtoSchema:
        return self._by_id(schema_id)

    def __reduce__(self):
        return (ProtobufSchemas, (self.registry,))
