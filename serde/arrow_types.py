"""Avro-style schemas -> Arrow types, and Python values -> Arrow arrays with per-row errors.

One schema language for every typed format: JSON and Avro values are both described by an
Avro schema (``.avsc`` file, inline, or from a registry); its Arrow type is what Spark sees.

Invariants:
- Types map to what Spark's Arrow conversion accepts: timestamps are ``timestamp[us, UTC]``
  (``local-timestamp-*``: no zone), ``time-*`` stay integers, enums are strings, fixed is binary,
  a union must be one type or ``[null, T]`` (anything else is a ``SchemaError``).
- ``to_array`` never lets one bad row fail a batch: a row that cannot become the Arrow type
  turns into null with an error message; the other rows keep their values and order.
"""
from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

import fastavro
import pyarrow as pa

from kafka_eos import KafkaEosError

Coerce = Callable[[Any], Any]
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_PRIMITIVE = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
              "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(), "null": pa.null()}


class SchemaError(KafkaEosError, ValueError):
    """A schema cannot be parsed, or has a shape kafka-eos cannot map to Spark."""


def parse_schema(text: str) -> dict | list | str:
    """Parse and check Avro schema JSON text (fastavro); SchemaError names the problem."""
    try:
        return fastavro.parse_schema(json.loads(text))
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as exc:
        raise SchemaError(f"not a valid Avro schema: {exc}") from None


def arrow_type(schema: Any, named: dict[str, Any] | None = None) -> pa.DataType:
    """The Arrow type of a parsed Avro schema."""
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVE:
            return _PRIMITIVE[schema]
        if schema in named:
            return named[schema]
        raise SchemaError(f"unknown type {schema!r}")
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise SchemaError(f"union {json.dumps(schema)[:80]} has several non-null types; use a record "
                              "or a nullable type ['null', T]")
        return arrow_type(branches[0], named)
    kind, logical = schema["type"], schema.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros"):
        return pa.timestamp("us", tz="UTC")
    if logical in ("local-timestamp-millis", "local-timestamp-micros"):
        return pa.timestamp("us")
    if logical == "date":
        return pa.date32()
    if logical == "decimal":
        return pa.decimal128(schema["precision"], schema.get("scale", 0))
    if kind == "record":
        result = pa.struct([pa.field(f["name"], arrow_type(f["type"], named)) for f in schema["fields"]])
    elif kind == "enum":
        result = pa.string()
    elif kind == "fixed":
        result = pa.binary()
    elif kind == "array":
        return pa.list_(arrow_type(schema["items"], named))
    elif kind == "map":
        return pa.map_(pa.string(), arrow_type(schema["values"], named))
    else:
        return arrow_type(kind, named)
    if "name" in schema:
        named[schema["name"]] = result
    return result


def _fail(path: str, value: Any, wanted: str) -> None:
    raise ValueError(f"{path or 'value'}: {str(value)[:60]!r} is not {wanted}")


def _integer(path: str) -> Coerce:
    def coerce(v: Any) -> Any:
        if type(v) is int:
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        _fail(path, v, "a whole number")
    return coerce


def _floating(path: str) -> Coerce:
    def coerce(v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v
        _fail(path, v, "a number")
    return coerce


def _timestamp(path: str, tz: bool) -> Coerce:
    def coerce(v: Any) -> Any:
        if isinstance(v, str):
            try:
                v = dt.datetime.fromisoformat(v)
            except ValueError:
                _fail(path, v, "an ISO-8601 timestamp")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            v = _EPOCH + dt.timedelta(milliseconds=v)   # JSON numbers are epoch milliseconds
        if not isinstance(v, dt.datetime):
            _fail(path, v, "a timestamp")
        if tz and v.tzinfo is None:
            return v.replace(tzinfo=dt.timezone.utc)
        return v if tz else v.replace(tzinfo=None)
    return coerce


def _date(path: str) -> Coerce:
    def coerce(v: Any) -> Any:
        if isinstance(v, str):
            try:
                return dt.date.fromisoformat(v)
            except ValueError:
                _fail(path, v, "an ISO-8601 date")
        if isinstance(v, int) and not isinstance(v, bool):
            return dt.date(1970, 1, 1) + dt.timedelta(days=v)
        if isinstance(v, dt.date):
            return v
        _fail(path, v, "a date")
    return coerce


def _decimal(path: str) -> Coerce:
    def coerce(v: Any) -> Any:
        if isinstance(v, Decimal):
            return v
        if not isinstance(v, bool):
            try:
                return Decimal(str(v))
            except InvalidOperation:
                pass
        _fail(path, v, "a decimal number")
    return coerce


def _binary(path: str, text_is_base64: bool) -> Coerce:
    def coerce(v: Any) -> Any:
        if isinstance(v, bytes):
            return v
        if isinstance(v, str) and text_is_base64:
            try:
                return base64.b64decode(v, validate=True)
            except binascii.Error:
                _fail(path, v, "base64")
        _fail(path, v, "bytes")
    return coerce


def _string(path: str) -> Coerce:
    def coerce(v: Any) -> Any:
        if isinstance(v, str):
            return v
        if isinstance(v, uuid.UUID):
            return str(v)
        _fail(path, v, "a string")
    return coerce


def _nested(t: pa.DataType, path: str, json_input: bool) -> Coerce:
    if pa.types.is_struct(t):
        fields = [(f.name, coercer(f.type, f"{path}.{f.name}".lstrip("."), json_input)) for f in t]

        def record(v: Any) -> Any:
            if not isinstance(v, dict):
                _fail(path, v, "an object")
            return {name: (c(v[name]) if c and v.get(name) is not None else v.get(name)) for name, c in fields}
        return record
    item = coercer(t.item_type if pa.types.is_map(t) else t.value_type, f"{path}[]", json_input)
    if pa.types.is_map(t):
        def mapping(v: Any) -> Any:
            if not isinstance(v, dict):
                _fail(path, v, "an object")
            return {str(k): (item(x) if item and x is not None else x) for k, x in v.items()}
        return mapping

    def sequence(v: Any) -> Any:
        if not isinstance(v, list):
            _fail(path, v, "a list")
        return [item(x) if item and x is not None else x for x in v]
    return sequence


def coercer(t: pa.DataType, path: str = "", json_input: bool = False) -> Coerce | None:
    """A function that checks and converts one non-null Python value to what ``pa.array`` takes
    for ``t`` (None when values need no conversion); it raises ValueError naming the field."""
    if pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_map(t):
        return _nested(t, path, json_input)
    if pa.types.is_integer(t):
        return _integer(path)
    if pa.types.is_floating(t):
        return _floating(path)
    if pa.types.is_timestamp(t):
        return _timestamp(path, t.tz is not None)
    if pa.types.is_date(t):
        return _date(path)
    if pa.types.is_decimal(t):
        return _decimal(path)
    if pa.types.is_binary(t):
        return _binary(path, json_input)
    if pa.types.is_string(t):
        return _string(path)
    return None


class RowDecodeError(KafkaEosError, ValueError):
    """One row's bytes do not decode; the message says why (it becomes the row's error)."""


def decode_rows(data: pa.Array, read_one: Callable[[Any], Any], t: pa.DataType,
                coerce: Coerce | None) -> tuple[pa.Array, list[str | None]]:
    """(typed array, per-row error or None): ``read_one`` per non-null item; a row whose
    ``read_one`` raises ``RowDecodeError`` is null with the error's message, the others decode."""
    raw = data.to_pylist()
    errors: list[str | None] = [None] * len(raw)
    values: list[Any] = [None] * len(raw)
    for i, item in enumerate(raw):
        if item is not None:
            try:
                values[i] = read_one(item)
            except RowDecodeError as exc:
                errors[i] = str(exc)
    return to_array(values, errors, t, coerce), errors


def encode_rows(data: pa.Array, write_one: Callable[[Any], bytes], mismatch: Callable[[int, str], str]) -> pa.Array:
    """A binary array of ``write_one`` per non-null row (``to_pylist``, maps as dicts); a row whose
    ``write_one`` raises ``ValueError`` fails the batch with ``mismatch(row index, reason)``."""
    out: list[bytes | None] = []
    for i, row in enumerate(data.to_pylist(maps_as_pydicts="strict")):
        try:
            out.append(None if row is None else write_one(row))
        except ValueError as exc:
            raise ValueError(mismatch(i, str(exc))) from None
    return pa.array(out, type=pa.binary())


def to_array(values: list[Any], errors: list[str | None], t: pa.DataType, coerce: Coerce | None) -> pa.Array:
    """An Arrow array of ``values`` (None = null). A row that fails gets null and an entry in
    ``errors`` (changed in place); rows already in error must be None in ``values``."""
    if coerce is not None:
        for i, v in enumerate(values):
            if v is not None:
                try:
                    values[i] = coerce(v)
                except (ValueError, TypeError, OverflowError) as exc:
                    values[i], errors[i] = None, str(exc)
    try:
        return pa.array(values, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        for i, v in enumerate(values):   # find the rows Arrow refuses; keep the others
            if v is None:
                continue
            try:
                pa.array([v], type=t)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                values[i], errors[i] = None, f"does not fit {t}: {exc}"
        return pa.array(values, type=t)
