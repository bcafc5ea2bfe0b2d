"""The sink's writer schema against the registry, before anything is written: the one check, run by
``validate`` (``config.rules_registry``) and by the query's start (``serde.resolve``).

Invariants:
- ``auto_register`` on: the registry's own compatibility test decides (``registry.compatible``,
  against every version for a ``*_TRANSITIVE`` level, as registering checks); an incompatible
  schema is ``SchemaIncompatible`` naming the subject, its level, the version compared and each
  field with the rule it breaks
  (``registry_diff``, in the directions the level asks: BACKWARD the new schema reads the latest's
  records, FORWARD the latest reads the new one's, FULL both).
- ``auto_register`` off: nothing is registered; the sink writes with the pinned schema (the
  subject's latest, a version or an id: ``pinned``). A configured schema the pinned one cannot write
  (Confluent's ``latest.compatibility.strict``: the pinned schema must read what the configured
  one describes; for Protobuf by field name, as the encoder fills messages) is ``SchemaIncompatible``
  naming the field; so is a pinned schema of another type than the format.
- Registry failures are raised as the client raised them (``registry.fault`` sorts them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_eos import KafkaEosError
from kafka_eos.serde.formats import REGISTRY_SCHEMA_TYPES, DataFormat, Registry
from kafka_eos.serde.registry import compatibility_level, compatible, schema_by_id, schema_of, version_text
from kafka_eos.serde.registry_diff import Problem, problems

FIX_REGISTER = ("make the change compatible (a new Avro field with a default, an optional JSON property, a new "
                "Protobuf field number), or write a new subject; changing the subject's compatibility level is "
                "its owner's decision")
FIX_PINNED = ("change the configured schema (or the transform's output) to what the pinned schema writes, or pin "
              "the version that has it")


class SchemaIncompatible(KafkaEosError, ValueError):
    """The sink's writer schema breaks its subject's compatibility rule, or the pinned schema cannot
    write what the configured one describes."""


@dataclass(frozen=True)
class Candidate:
    """The sink's configured writer schema: Avro or JSON Schema text; for Protobuf the .proto text,
    its compiled ``file_set`` and the message written."""
    format: DataFormat
    text: str
    file_set: bytes | None = None
    message: str | None = None
    references: tuple = ()

    @property
    def schema_type(self) -> str:
        return REGISTRY_SCHEMA_TYPES[self.format]

    def descriptor(self) -> Any:
        from kafka_eos.serde.protobuf_schemas import ProtoSchema
        return ProtoSchema(self.file_set or b"").message(self.message)


@dataclass(frozen=True)
class Pinned:
    """A registered schema the sink writes with: its id, the registry's ``Schema`` and where it came from."""
    schema_id: int
    schema: Any
    what: str   # e.g. "the latest version (3) of orders-value"


def pinned(registry: Registry, subject: str) -> Pinned:
    """The schema ``auto_register: false`` writes with: ``schema_id``, else ``version``, else the latest."""
    if registry.schema_id is not None:
        return Pinned(registry.schema_id, schema_by_id(registry, registry.schema_id), f"schema id {registry.schema_id}")
    version = registry.version if registry.version is not None else "latest"
    found = version_text(registry, subject, version)
    which = f"version {found.version}" if registry.version is not None else f"the latest version ({found.version})"
    return Pinned(found.schema_id, found.schema, f"{which} of {subject}")


def _registered_side(fmt: DataFormat, registry: Registry, schema: Any, message: str | None) -> Any:
    """What ``problems`` compares on the registered side: text, or the Protobuf message's Descriptor."""
    if fmt is not DataFormat.PROTOBUF:
        return schema.schema_str
    from kafka_eos.serde.protobuf_registry import compile_registered
    from kafka_eos.serde.protobuf_schemas import ProtoSchema, ProtoSchemaError
    try:
        return ProtoSchema(compile_registered(registry, schema, "registered.proto")).message(message)
    except ProtoSchemaError as exc:
        raise SchemaIncompatible(f"the registered schema has no message {message}: {exc}\n    fix: write a message "
                                 "the registered schema declares (schema.message), or another subject") from None


def _mine(candidate: Candidate) -> Any:
    return candidate.descriptor() if candidate.format is DataFormat.PROTOBUF else candidate.text


def _listed(found: list[Problem]) -> str:
    return "; ".join(str(p) for p in found)


DIRECTIONS = {"BACKWARD": ("new",), "FORWARD": ("old",), "FULL": ("new", "old")}


def explain(candidate: Candidate, registry: Registry, latest: Any, level: str) -> list[Problem]:
    """The fields the candidate breaks against the ``latest`` registered schema, by ``level``."""
    base = level.upper().removesuffix("_TRANSITIVE")
    mine = _mine(candidate)
    message = candidate.descriptor().full_name if candidate.format is DataFormat.PROTOBUF else None
    theirs = _registered_side(candidate.format, registry, latest, message)
    found: list[Problem] = []
    for reader in DIRECTIONS.get(base, ()):
        pair = (mine, theirs) if reader == "new" else (theirs, mine)
        found += problems(candidate.format, *pair)
    return found


def _explained(candidate: Candidate, registry: Registry, subject: str, level: str) -> tuple[Any, list[Problem]]:
    """(the version compared, the fields broken): the latest, else (a transitive level) each older one."""
    latest = version_text(registry, subject, "latest")
    found = explain(candidate, registry, latest.schema, level)
    if found or not level.upper().endswith("_TRANSITIVE"):
        return latest, found
    for version in range(latest.version - 1, 0, -1):
        try:
            older = version_text(registry, subject, version)
        except Exception:  # noqa: BLE001 - a deleted version: the next older one
            continue
        found = explain(candidate, registry, older.schema, level)
        if found:
            return older, found
    return latest, []


def check_registration(registry: Registry, subject: str, candidate: Candidate) -> None:
    """Refuse (``SchemaIncompatible``) a candidate the registry would not register under ``subject``."""
    schema = schema_of(candidate.text, candidate.schema_type, candidate.references)
    level = compatibility_level(registry, subject)
    if compatible(registry, subject, schema, level.upper().endswith("_TRANSITIVE")):
        return
    compared, found = _explained(candidate, registry, subject, level)
    why = _listed(found) if found else "the registry names no field, and none is found here"
    raise SchemaIncompatible(f"the sink's schema breaks subject {subject}'s compatibility level {level} against its "
                             f"version {compared.version} (id {compared.schema_id}): {why}\n    fix: {FIX_REGISTER}")


def check_pinned(registry: Registry, subject: str, candidate: Candidate | None, chosen: Pinned) -> None:
    """Refuse a pinned schema of another type, or one that cannot write what ``candidate`` describes."""
    schema_type = chosen.schema.schema_type or "AVRO"
    wanted = REGISTRY_SCHEMA_TYPES.get(candidate.format if candidate else DataFormat.AVRO)
    if candidate is not None and schema_type != wanted:
        raise SchemaIncompatible(f"{chosen.what} is a {schema_type} schema, the sink writes "
                                 f"{candidate.format.value} ({wanted})\n    fix: pin a {wanted} schema")
    if candidate is None:
        return
    message = candidate.descriptor().full_name if candidate.format is DataFormat.PROTOBUF else None
    theirs = _registered_side(candidate.format, registry, chosen.schema, message)
    found = problems(candidate.format, theirs, _mine(candidate), by_name=True)
    if found:
        raise SchemaIncompatible(f"auto_register is off and the sink writes with {chosen.what} (id {chosen.schema_id}), "
                                 f"which cannot write what the configured schema describes: {_listed(found)}"
                                 f"\n    fix: {FIX_PINNED}")


def check_writer(registry: Registry, subject: str, candidate: Candidate | None) -> Pinned | None:
    """The one check of the sink's writer schema (``validate`` and the start): the pinned schema
    (returned) when ``auto_register`` is off, else the registration's compatibility."""
    if registry.pinned:
        chosen = pinned(registry, subject)
        check_pinned(registry, subject, candidate, chosen)
        return chosen
    if candidate is not None:
        check_registration(registry, subject, candidate)
    return None
