"""Protobuf messages <-> Python values of their Arrow type (``protobuf_types``), per record.

Invariants:
- Reading follows Protobuf's presence rules: a field with presence (a message, a ``oneof``
  member, proto3 ``optional``, any proto2 singular field) that is not set is null; a proto3
  scalar without presence reads as its default (0, "", false), as every Protobuf reader sees it.
- An enum number the schema does not name (an open proto3 enum) reads as its number in text.
- Timestamps keep microseconds (nanoseconds beyond are dropped, as Spark holds no more).
- Writing is the inverse; null leaves a field unset. A value that does not fit its field
  raises ``ValueError`` naming the field path.
First version: one Python message object per record (dynamic messages of the ``protobuf``
package, its upb C core); no columnar fast path.
"""
from __future__ import annotations

import datetime as dt
import functools
from decimal import Decimal
from typing import Any, Callable

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from kafka_eos.serde.protobuf_types import DURATION, TIMESTAMP, WRAPPERS, is_map

F = FieldDescriptor
Read = Callable[[Any], Any]
_UNSIGNED_64 = (F.TYPE_UINT64, F.TYPE_FIXED64)


def _scalar_reader(field: FieldDescriptor) -> Read | None:
    if field.type == F.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        return lambda v: names.get(v, str(v))
    if field.type in _UNSIGNED_64:
        return Decimal
    return None


def _message_reader(message: Descriptor) -> Read:
    name = message.full_name
    if name == TIMESTAMP:
        return lambda m: m.ToDatetime(tzinfo=dt.timezone.utc)
    if name == DURATION:
        return lambda m: m.ToTimedelta()
    if name in WRAPPERS:
        inner = _scalar_reader(message.fields_by_name["value"])
        return (lambda m: inner(m.value)) if inner else (lambda m: m.value)
    return reader(message)


def _single_reader(field: FieldDescriptor) -> Read | None:
    if field.type == F.TYPE_MESSAGE:
        return _message_reader(field.message_type)
    return _scalar_reader(field)


def _field_reader(field: FieldDescriptor) -> Callable[[Message], Any]:
    name = field.name
    if is_map(field):
        key = _single_reader(field.message_type.fields_by_name["key"])
        value = _single_reader(field.message_type.fields_by_name["value"])
        return lambda m: {(key(k) if key else k): (value(v) if value else v) for k, v in getattr(m, name).items()}
    single = _single_reader(field)
    if field.is_repeated:
        return (lambda m: [single(v) for v in getattr(m, name)]) if single else (lambda m: list(getattr(m, name)))
    if field.has_presence:
        return lambda m: (single(getattr(m, name)) if single else getattr(m, name)) if m.HasField(name) else None
    return (lambda m: single(getattr(m, name))) if single else (lambda m: getattr(m, name))


@functools.lru_cache(maxsize=512)
def reader(message: Descriptor) -> Callable[[Message], dict]:
    """A function turning a message of this type into a dict of its fields' values."""
    fields = [(f.name, _field_reader(f)) for f in message.fields]
    return lambda m: {name: read(m) for name, read in fields}


def _scalar_value(field: FieldDescriptor, value: Any, path: str) -> Any:
    if field.type == F.TYPE_ENUM:
        if isinstance(value, str):
            known = field.enum_type.values_by_name.get(value)
            if known is None:
                names = ", ".join(field.enum_type.values_by_name)
                raise ValueError(f"{path}: {value!r} is not a value of enum {field.enum_type.full_name} ({names})")
            return known.number
        return int(value)
    if field.type in _UNSIGNED_64 and isinstance(value, Decimal):
        return int(value)
    return value


def _set_message(target: Message, value: Any, path: str) -> None:
    name = target.DESCRIPTOR.full_name
    if name == TIMESTAMP:
        target.FromDatetime(value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc))
    elif name == DURATION:
        target.FromTimedelta(value)
    elif name in WRAPPERS:
        target.value = _scalar_value(target.DESCRIPTOR.fields_by_name["value"], value, path)
    else:
        fill(target, value, path)
    target.SetInParent()


def _set_field(message: Message, field: FieldDescriptor, value: Any, path: str) -> None:
    target = getattr(message, field.name) if field.is_repeated or field.type == F.TYPE_MESSAGE else None
    if is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        for k, v in value.items():
            if value_field.type == F.TYPE_MESSAGE:
                _set_message(target[k], v, f"{path}[{k}]")  # type: ignore[index]
            elif v is not None:
                target[k] = _scalar_value(value_field, v, f"{path}[{k}]")  # type: ignore[index]
    elif field.is_repeated and field.type == F.TYPE_MESSAGE:
        for i, v in enumerate(value):
            _set_message(target.add(), v, f"{path}[{i}]")  # type: ignore[union-attr]
    elif field.is_repeated:
        target.extend(_scalar_value(field, v, f"{path}[{i}]") for i, v in enumerate(value))  # type: ignore[union-attr]
    elif field.type == F.TYPE_MESSAGE:
        _set_message(target, value, path)  # type: ignore[arg-type]
    else:
        setattr(message, field.name, _scalar_value(field, value, path))


def fill(message: Message, row: Any, path: str = "") -> Message:
    """Set ``message``'s fields from a dict of values (null: left unset); returns ``message``."""
    if not isinstance(row, dict):
        raise ValueError(f"{path or 'value'}: {str(row)[:60]!r} is not a struct of the message's fields")
    for field in message.DESCRIPTOR.fields:
        value = row.get(field.name)
        if value is None:
            continue
        where = f"{path}.{field.name}".lstrip(".")
        try:
            _set_field(message, field, value, where)
        except (TypeError, AttributeError, OverflowError) as exc:
            raise ValueError(f"{where}: {str(value)[:60]!r} does not fit the {field.full_name} field: {exc}") from None
    return message
