"""Why one schema cannot read what another wrote, field by field: pure logic, one function per format.

``problems(fmt, reader, writer)`` lists ``Problem(field, rule, detail)``: data written with
``writer`` that ``reader`` cannot read. The rule names follow Confluent's compatibility checker's
(``READER_FIELD_MISSING_DEFAULT_VALUE``, ``TYPE_MISMATCH``, ...), so a refusal reads like the
registry's own verbose answer; registries that answer without reasons (Apicurio's ccompat API
says only ``is_compatible``) get the field named from here.
- Avro: the specification's schema resolution (fields by name or alias, defaults, promotions,
  enum symbols, unions, named types).
- Protobuf: messages by field number (the wire), or by field name (``by_name``: kafka-eos's
  encoder fills a message by name); a field's kind, scalar type or message type changed.
- JSON Schema: object properties (required ones added, types changed, closed content models),
  array items, recursively.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kafka_eos.serde.formats import DataFormat

PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
              "string": {"bytes"}, "bytes": {"string"}}
NAMED = ("record", "enum", "fixed")


@dataclass(frozen=True)
class Problem:
    field: str    # path of the field, e.g. ``value.lines[].qty``
    rule: str     # Confluent's name of the incompatibility
    detail: str

    def __str__(self) -> str:
        return f"field {self.field}: {self.detail} ({self.rule})"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ---- Avro ----

class _Names(dict):
    """Named types of one schema by full name, filled as the schema is walked."""

    def resolve(self, schema: Any, namespace: str = "") -> Any:
        if isinstance(schema, str) and schema not in PROMOTIONS and schema not in ("null", "boolean"):
            return self.get(schema) or self.get(f"{namespace}.{schema}") or schema
        if isinstance(schema, dict) and schema.get("type") in NAMED:
            name = schema["name"]
            space = schema.get("namespace", namespace)
            self[name if "." in name or not space else f"{space}.{name}"] = schema
            self.setdefault(name.rsplit(".", 1)[-1], schema)
        return schema


def _type_name(schema: Any) -> str:
    if isinstance(schema, dict):
        return str(schema.get("name") or schema.get("type"))
    return "union" if isinstance(schema, list) else str(schema)


def _avro(reader: Any, writer: Any, path: str, rn: _Names, wn: _Names) -> list[Problem]:
    reader, writer = rn.resolve(reader), wn.resolve(writer)
    if isinstance(writer, list):
        return [p for branch in writer for p in _avro(reader, branch, path, rn, wn)]
    if isinstance(reader, list):
        for branch in reader:
            if not _avro(branch, writer, path, rn, wn):
                return []
        return [Problem(path or "(value)", "MISSING_UNION_BRANCH",
                        f"a {_type_name(writer)} value has no branch in the reader's union")]
    rt = reader.get("type") if isinstance(reader, dict) else reader
    wt = writer.get("type") if isinstance(writer, dict) else writer
    if isinstance(rt, (dict, list)) or isinstance(wt, (dict, list)):   # {"type": {...}} wraps a type
        return _avro(rt if isinstance(rt, (dict, list)) else reader, wt if isinstance(wt, (dict, list)) else writer,
                     path, rn, wn)
    if rt != wt:
        if wt in PROMOTIONS and rt in PROMOTIONS[wt]:
            return []
        return [Problem(path or "(value)", "TYPE_MISMATCH", f"{wt} cannot be read as {rt}")]
    if rt == "record":
        return _avro_record(reader, writer, path, rn, wn)
    if rt == "enum":
        missing = [s for s in writer.get("symbols", []) if s not in reader.get("symbols", [])]
        if missing and "default" not in reader:
            return [Problem(path or "(value)", "MISSING_ENUM_SYMBOLS", f"symbols {missing} missing from the reader's enum")]
    if rt == "array":
        return _avro(reader["items"], writer["items"], f"{path}[]", rn, wn)
    if rt == "map":
        return _avro(reader["values"], writer["values"], f"{path}{{}}", rn, wn)
    if rt == "fixed" and reader.get("size") != writer.get("size"):
        return [Problem(path or "(value)", "FIXED_SIZE_MISMATCH", f"fixed size {writer.get('size')} read as "
                        f"{reader.get('size')}")]
    return []


def _avro_record(reader: dict, writer: dict, path: str, rn: _Names, wn: _Names) -> list[Problem]:
    found: list[Problem] = []
    written = {f["name"]: f for f in writer.get("fields", [])}
    for field in reader.get("fields", []):
        where = _join(path, field["name"])
        names = [field["name"], *field.get("aliases", [])]
        source = next((written[n] for n in names if n in written), None)
        if source is not None:
            found += _avro(field["type"], source["type"], where, rn, wn)
        elif "default" not in field:
            found.append(Problem(where, "READER_FIELD_MISSING_DEFAULT_VALUE",
                                 "the reader has the field without a default, the writer does not have it"))
    return found


def avro_problems(reader_text: str, writer_text: str) -> list[Problem]:
    return _avro(json.loads(reader_text), json.loads(writer_text), "", _Names(), _Names())


# ---- Protobuf ----

def _kind(field: Any) -> str:
    label = "repeated " if field.is_repeated else ""
    if field.message_type is not None:
        return f"{label}{field.message_type.full_name}"
    if field.enum_type is not None:
        return f"{label}{field.enum_type.full_name}"
    return f"{label}{_SCALARS.get(field.type, str(field.type))}"


_SCALARS = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32", 8: "bool",
            9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}


def protobuf_problems(reader: Any, writer: Any, by_name: bool = False, path: str = "") -> list[Problem]:
    """Fields of ``writer`` (a message Descriptor) that ``reader`` reads as another kind."""
    key = (lambda f: f.name) if by_name else (lambda f: f.number)
    readers = {key(f): f for f in reader.fields}
    found: list[Problem] = []
    for field in writer.fields:
        other = readers.get(key(field))
        if other is None:
            continue
        where = _join(path, field.name)
        if _kind(field) != _kind(other):
            rule = "FIELD_KIND_CHANGED" if field.message_type is not None or other.message_type is not None \
                else "FIELD_SCALAR_KIND_CHANGED"
            found.append(Problem(where, rule, f"{_kind(field)} is read as {_kind(other)}"))
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry \
                and field.message_type.full_name != "google.protobuf.Timestamp":
            found += protobuf_problems(other.message_type, field.message_type, by_name, where) \
                if field.message_type is not other.message_type else []
    return found


# ---- JSON Schema ----

def _types(schema: dict) -> set[str]:
    t = schema.get("type")
    types = set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()
    return types | {"integer"} if "number" in types else types


def _json(reader: Any, writer: Any, path: str) -> list[Problem]:
    if not isinstance(reader, dict) or not isinstance(writer, dict):
        return []
    rt, wt = _types(reader), _types(writer)
    if rt and wt and not wt <= rt:
        return [Problem(path or "(value)", "TYPE_CHANGED", f"type {sorted(wt)} is read as {sorted(rt)}")]
    found: list[Problem] = []
    if "items" in reader and "items" in writer:
        found += _json(reader["items"], writer["items"], f"{path}[]")
    rp, wp = reader.get("properties", {}), writer.get("properties", {})
    for name in sorted(set(reader.get("required", [])) - set(writer.get("required", []))):
        found.append(Problem(_join(path, name), "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
                             "the reader requires the property, the writer does not"))
    closed = reader.get("additionalProperties") is False
    for name in sorted(wp):
        if name in rp:
            found += _json(rp[name], wp[name], _join(path, name))
        elif closed:
            found.append(Problem(_join(path, name), "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                                 "the writer has the property, the reader's closed content model does not"))
    if writer.get("additionalProperties") is not False:
        for name in sorted(set(rp) - set(wp)):
            found.append(Problem(_join(path, name), "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
                                 "the reader adds the property to what the writer's open content model allowed "
                                 "(anything)"))
    return found


def json_schema_problems(reader_text: str, writer_text: str) -> list[Problem]:
    return _json(json.loads(reader_text), json.loads(writer_text), "")


def problems(fmt: DataFormat, reader: Any, writer: Any, by_name: bool = False) -> list[Problem]:
    """Avro and JSON Schema: schema texts; Protobuf: message Descriptors."""
    if fmt is DataFormat.PROTOBUF:
        return protobuf_problems(reader, writer, by_name)
    return json_schema_problems(reader, writer) if fmt is DataFormat.JSON else avro_problems(reader, writer)
