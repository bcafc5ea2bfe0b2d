"""Schema-registry lookups (confluent-kafka's ``SchemaRegistryClient``), cached per process.

Invariants:
- Lookups by id are cached forever (ids are immutable in a registry); the client is built
  lazily from a picklable ``Registry`` so executors can make their own.
- The driver resolves what must be fixed for a query's life (the reader schema: the subject's
  latest version; the writer id: the configured schema registered under the subject) and ships
  the results, so executors only look up writer schemas by id.
- An id the registry answers 404 for is ``UnknownSchemaId`` (the record's fault); any other
  failed lookup is ``WriterSchemaUnavailable`` (fails the batch). Messages name the URL with
  any ``user:password@`` masked: they end up in DLQ headers, which no log redaction sees.
- What a failed call says about the registry is ``fault``'s one answer: ``missing`` (404),
  ``refused`` (401/403: the credentials), ``unreachable`` (no answer, or any other status).
- The compatibility test is the registry's own
  (``POST /compatibility/subjects/{s}/versions/latest?verbose=true``); a subject without
  versions is compatible with anything (Confluent answers 404, Apicurio ``true``). Its reasons
  are not kept (the client returns the verdict only; Apicurio gives none): ``registry_diff`` names
  the field.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any

from kafka_eos.serde.avro_serde import UnknownSchemaId, WriterSchemaUnavailable
from kafka_eos.serde.formats import Registry
from kafka_eos.serde.arrow_types import parse_schema


MISSING_EXTRA = ("the schema registry client of confluent-kafka needs its extra packages (authlib, httpx, "
                 "cachetools, attrs): pip install 'confluent-kafka[schemaregistry]'")


_USERINFO = re.compile(r"(://)[^/@\s]+@")


def _masked(text: str) -> str:
    return _USERINFO.sub(r"\1***@", text)


def _registry_module():
    try:
        import confluent_kafka.schema_registry as module
    except ImportError as exc:
        raise RuntimeError(f"{MISSING_EXTRA} ({exc})") from None
    return module


@functools.lru_cache(maxsize=8)
def _client(registry: Registry):
    return _registry_module().SchemaRegistryClient(registry.client_conf())


def _avro_schema(text: str):
    return _registry_module().Schema(json.dumps(json.loads(text)), "AVRO")


MISSING, REFUSED, UNREACHABLE = "missing", "refused", "unreachable"


def fault(exc: BaseException) -> str:
    """What a failed registry call says: ``missing`` (404), ``refused`` (401, 403), else ``unreachable``."""
    status = getattr(exc, "http_status_code", None)
    return MISSING if status == 404 else REFUSED if status in (401, 403) else UNREACHABLE


def masked(text: str) -> str:
    """``text`` with any ``user:password@`` of a URL masked."""
    return _masked(text)


def schema_of(text: str, schema_type: str, references: tuple = ()) -> Any:
    """The registry client's ``Schema`` of ``text`` (Avro text normalized as ``register`` sends it)."""
    return _avro_schema(text) if schema_type == "AVRO" else _registry_module().Schema(text, schema_type, list(references))


def compatible(registry: Registry, subject: str, schema: Any, every_version: bool = False) -> bool:
    """Whether ``schema`` may be registered under ``subject`` by its compatibility level (the
    registry's ``POST /compatibility/subjects/{s}/versions/latest?verbose=true``; ``every_version``,
    for a ``*_TRANSITIVE`` level: ``POST /compatibility/subjects/{s}/versions?verbose=true``)."""
    client = _client(registry)
    try:
        if every_version:
            return bool(client.test_compatibility_all_versions(subject, schema, verbose=True))
        return bool(client.test_compatibility(subject, schema, verbose=True))
    except Exception as exc:  # noqa: BLE001 - sorted by fault(); a subject without versions is compatible
        if fault(exc) == MISSING:
            return True
        raise


def compatibility_level(registry: Registry, subject: str) -> str:
    """The subject's compatibility level, else the registry's global one."""
    client = _client(registry)
    try:
        return str(client.get_compatibility(subject))
    except Exception as exc:  # noqa: BLE001 - no level of its own (Apicurio: no such subject): the global one
        if fault(exc) != MISSING:
            raise
    try:
        return str(client.get_compatibility())
    except Exception as exc:  # noqa: BLE001 - no global level either: the registries' default
        if fault(exc) != MISSING:
            raise
        return "BACKWARD"


def fetch(registry: Registry, schema_id: int) -> Any:
    """The registry's ``Schema`` of ``schema_id``: ``UnknownSchemaId`` when the registry answers 404
    (the record's fault), ``WriterSchemaUnavailable`` when the lookup fails otherwise."""
    try:
        return _client(registry).get_schema(schema_id)
    except Exception as exc:  # noqa: BLE001 - sorted into the record's fault or the registry's
        if getattr(exc, "http_status_code", None) == 404:
            raise UnknownSchemaId(_masked(f"unknown schema id {schema_id}: not in the schema registry at "
                                          f"{registry.url} ({exc})")) from None
        raise WriterSchemaUnavailable(_masked(f"schema id {schema_id}: the schema registry at "
                                              f"{registry.url} failed: {type(exc).__name__}: {exc}")) from None


def schema_by_id(registry: Registry, schema_id: int) -> Any:
    """The registry's ``Schema`` of ``schema_id`` (failures raised as the client raised them: ``fault``)."""
    return _client(registry).get_schema(schema_id)


def version_text(registry: Registry, subject: str, version: int | str) -> Any:
    """The registered schema of ``subject`` at ``version`` (a number or ``latest``)."""
    client = _client(registry)
    return client.get_latest_version(subject) if version in ("latest", -1) else client.get_version(subject, version)


class RegistrySchemas:
    """Writer schemas by id (callable, as ``AvroDecoder`` wants), plus driver-side resolution."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._by_id = functools.lru_cache(maxsize=256)(self._fetch)

    def _fetch(self, schema_id: int) -> Any:
        schema = fetch(self.registry, schema_id)
        if schema.schema_type not in (None, "AVRO"):
            raise ValueError(f"schema id {schema_id} is a {schema.schema_type} schema, not Avro")
        return parse_schema(schema.schema_str)

    def __call__(self, schema_id: int) -> Any:
        return self._by_id(schema_id)

    def __reduce__(self):
        return (RegistrySchemas, (self.registry,))

    def latest_text(self, subject: str) -> str:
        """The subject's latest schema, as JSON text (the reader schema when no file is given)."""
        return _client(self.registry).get_latest_version(subject).schema.schema_str

    def register(self, subject: str, schema_text: str, schema_type: str = "AVRO", references: tuple = ()) -> int:
        """The id of ``schema_text`` under ``subject`` (registered if new; idempotent)."""
        return _client(self.registry).register_schema(subject, schema_of(schema_text, schema_type, references))
