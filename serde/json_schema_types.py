"""JSON Schema -> Arrow types (what Spark sees of a ``format: json`` value read with a registry).

Invariants:
- ``object`` with ``properties`` -> struct (declared order); ``object`` with only a schema in
  ``additionalProperties`` -> map<string, T>; ``array`` -> list of its ``items``; ``string`` ->
  string (``format: date-time`` -> timestamp[us, UTC], ``format: date`` -> date); ``integer`` ->
  int64; ``number`` -> double; ``boolean``; an ``enum`` of strings -> string.
- A type list, ``oneOf`` or ``anyOf`` may add ``null`` to one type (a nullable field); more
  than one non-null type has no single Spark type and is refused.
- ``$ref`` is followed within the document (``#/definitions/...``, ``#/$defs/...``); a
  reference to another document, or a schema that contains itself, is refused.
- Every refusal is a ``SchemaError`` naming the field path.
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kafka_eos.serde.arrow_types import SchemaError

_SIMPLE = {"integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}
_STRING_FORMATS = {"date-time": pa.timestamp("us", tz="UTC"), "date": pa.date32()}


def parse_json_schema(text: str) -> dict:
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise SchemaError(f"not a valid JSON Schema: {exc}") from None
    if not isinstance(schema, dict):
        raise SchemaError("not a valid JSON Schema: the document is not an object")
    return schema


def _pointer(root: dict, ref: str, path: str) -> dict:
    if not ref.startswith("#"):
        raise SchemaError(f"field {path or '(value)'}: $ref {ref!r} points outside the schema; "
                          "inline it, or keep definitions under #/$defs")
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise SchemaError(f"field {path or '(value)'}: $ref {ref!r} names nothing in the schema")
        node = node[part]
    return node


def _non_null(schema: dict, path: str) -> tuple[dict, list | None]:
    """(the schema less its null alternatives, its non-null types; None: read the merged schema again)."""
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = [o for o in schema[key] if not (isinstance(o, dict) and o.get("type") == "null")]
            if len(options) != 1:
                raise SchemaError(f"field {path or '(value)'}: {key} of {len(options)} non-null schemas has no single "
                                  "Spark type; use one object type with optional properties")
            rest = {k: v for k, v in schema.items() if k != key}
            return {**rest, **options[0]}, None
    kind = schema.get("type")
    kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if k not in ("null", None)]
    return schema, kinds


def arrow_type(schema: Any, root: dict | None = None, path: str = "", seen: tuple[str, ...] = ()) -> pa.DataType:
    """The Arrow type of a (parsed) JSON Schema."""
    root = schema if root is None else root
    if not isinstance(schema, dict):
        raise SchemaError(f"field {path or '(value)'}: {json.dumps(schema)[:60]} is not a schema object")
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref in seen:
            raise SchemaError(f"field {path}: $ref {ref} contains itself (a recursive type has no Spark type)")
        return arrow_type(_pointer(root, ref, path), root, path, (*seen, ref))
    schema, kinds = _non_null(schema, path)
    if kinds is None:
        return arrow_type(schema, root, path, seen)
    if not kinds:
        kinds = ["object"] if "properties" in schema else ["string"] if _string_enum(schema) else []
    if len(kinds) != 1:
        raise SchemaError(f"field {path or '(value)'}: type {kinds or 'unspecified'} has no single Spark type; "
                          "give the field one type (and null, for an optional field)")
    return _typed(kinds[0], schema, root, path, seen)


def _string_enum(schema: dict) -> bool:
    return "enum" in schema and all(isinstance(v, str) for v in schema["enum"])


def _typed(kind: str, schema: dict, root: dict, path: str, seen: tuple[str, ...]) -> pa.DataType:
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "string":
        return _STRING_FORMATS.get(schema.get("format", ""), pa.string())
    if kind == "array":
        return pa.list_(arrow_type(schema.get("items", {}), root, f"{path}[]", seen))
    if kind == "object":
        properties = schema.get("properties")
        if properties:
            return pa.struct([pa.field(name, arrow_type(sub, root, f"{path}.{name}".lstrip("."), seen))
                              for name, sub in properties.items()])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return pa.map_(pa.string(), arrow_type(extra, root, f"{path}{{}}", seen))
        raise SchemaError(f"field {path or '(value)'}: an object with neither properties nor an "
                          "additionalProperties schema has no Spark type; declare its properties")
    raise SchemaError(f"field {path or '(value)'}: JSON Schema type {kind!r} has no Spark type")
