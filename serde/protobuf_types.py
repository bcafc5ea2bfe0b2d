"""Protobuf message descriptors -> Arrow types (what Spark sees of a ``format: protobuf`` value).

Invariants:
- Scalars: int32/sint32/sfixed32 -> int32; int64/sint64/sfixed64, uint32 and fixed32 -> int64;
  uint64 and fixed64 -> decimal(20, 0) (Spark has no unsigned 64-bit integer); float, double,
  bool, string; bytes -> binary; an enum -> its value's name (string).
- A message -> struct of its fields in declaration order; a ``oneof``'s members are nullable
  fields of that struct, the one that is set holds a value; ``repeated`` -> list; ``map<K, V>``
  -> map.
- Well-known types: ``Timestamp`` -> timestamp[us, UTC]; ``Duration`` -> duration[us] (Spark's
  day-time interval); the wrappers (``Int64Value``, ``StringValue``, ...) -> their nullable scalar.
  Other well-known messages (``Any``, ``FieldMask``, ...) are plain messages; ``Struct``,
  ``Value`` and ``ListValue`` are recursive, like any self-containing message, and refused.
- What cannot be mapped raises ``ProtoTypeError`` naming the field path, at ``validate``.
"""
from __future__ import annotations

import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from kafka_eos.serde.arrow_types import SchemaError

F = FieldDescriptor
SCALARS: dict[int, pa.DataType] = {
    F.TYPE_INT32: pa.int32(), F.TYPE_SINT32: pa.int32(), F.TYPE_SFIXED32: pa.int32(),
    F.TYPE_INT64: pa.int64(), F.TYPE_SINT64: pa.int64(), F.TYPE_SFIXED64: pa.int64(),
    F.TYPE_UINT32: pa.int64(), F.TYPE_FIXED32: pa.int64(),
    F.TYPE_UINT64: pa.decimal128(20, 0), F.TYPE_FIXED64: pa.decimal128(20, 0),
    F.TYPE_FLOAT: pa.float32(), F.TYPE_DOUBLE: pa.float64(), F.TYPE_BOOL: pa.bool_(),
    F.TYPE_STRING: pa.string(), F.TYPE_BYTES: pa.binary(), F.TYPE_ENUM: pa.string(),
}
TIMESTAMP = "google.protobuf.Timestamp"
DURATION = "google.protobuf.Duration"
WRAPPERS = {f"google.protobuf.{name}Value" for name in
            ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")}
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
DURATION_TYPE = pa.duration("us")


class ProtoTypeError(SchemaError):
    """A Protobuf field kafka-eos cannot map to a Spark type; the message names the field (runbook: a
    schema error's)."""


def is_map(field: FieldDescriptor) -> bool:
    return field.type == F.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


def message_type(message: Descriptor, path: str = "", seen: tuple[str, ...] = ()) -> pa.DataType:
    """The Arrow type of ``message``: a struct, or a scalar/timestamp for a well-known type."""
    name = message.full_name
    if name == TIMESTAMP:
        return TIMESTAMP_TYPE
    if name == DURATION:
        return DURATION_TYPE
    if name in WRAPPERS:
        return SCALARS[message.fields_by_name["value"].type]
    if name in seen:
        raise ProtoTypeError(f"field {path}: message {name} contains itself (a recursive type has no Spark type); "
                             "leave the field out of the schema the pipeline reads, or carry it as bytes")
    return pa.struct([pa.field(f.name, field_type(f, f"{path}.{f.name}".lstrip("."), (*seen, name)))
                      for f in message.fields])


def _single_type(field: FieldDescriptor, path: str, seen: tuple[str, ...]) -> pa.DataType:
    if field.type == F.TYPE_GROUP:
        raise ProtoTypeError(f"field {path}: proto2 groups are not supported; declare a message field instead")
    if field.type == F.TYPE_MESSAGE:
        return message_type(field.message_type, path, seen)
    try:
        return SCALARS[field.type]
    except KeyError:
        raise ProtoTypeError(f"field {path}: Protobuf type {field.type} has no Spark type") from None


def field_type(field: FieldDescriptor, path: str, seen: tuple[str, ...] = ()) -> pa.DataType:
    """The Arrow type of one field (list for repeated, map for map fields)."""
    if is_map(field):
        entry = field.message_type
        key = _single_type(entry.fields_by_name["key"], f"{path}.key", seen)
        return pa.map_(key, _single_type(entry.fields_by_name["value"], f"{path}.value", seen))
    single = _single_type(field, path, seen)
    return pa.list_(single) if field.is_repeated else single
