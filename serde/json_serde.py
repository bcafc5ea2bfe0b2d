"""JSON values <-> Arrow, typed by an Avro-style schema.

Invariants:
- Decoding: each value is one JSON document of the schema's shape; unknown fields are ignored,
  missing ones are null; a null value (tombstone) decodes to null, not to an error.
  Timestamps are ISO-8601 strings or epoch milliseconds; dates ISO strings; bytes base64;
  decimals strings or numbers. A value that does not fit gives an error for its row only.
- Encoding is the inverse (timestamps as ISO-8601 with zone, bytes base64, decimals strings),
  so ``decode(encode(x)) == x`` for every value of the schema's type.
"""
from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa

from kafka_eos.serde.arrow_types import RowDecodeError, arrow_type, coercer, decode_rows, parse_schema

Decoded = tuple[pa.Array, list]


class JsonDecoder:
    def __init__(self, schema_text: str) -> None:
        self.arrow_type = arrow_type(parse_schema(schema_text))
        self._coerce = coercer(self.arrow_type, json_input=True)

    def decode(self, data: pa.Array) -> Decoded:
        """(typed array, per-row error or None) for a binary/string array of JSON documents."""
        return decode_rows(data, _read, self.arrow_type, self._coerce)


def _read(item: bytes | str) -> Any:
    try:
        value = json.loads(item)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RowDecodeError(f"invalid JSON: {exc}") from None
    if value is None:
        raise RowDecodeError("invalid JSON: the document is null, expected a value of the schema")
    return value


def _default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class JsonEncoder:
    """Any Arrow column -> binary JSON documents (null stays null)."""

    def encode(self, data: pa.Array) -> pa.Array:
        rows = data.to_pylist(maps_as_pydicts="strict")
        return pa.array([None if r is None else json.dumps(r, default=_default, separators=(",", ":"),
                                                           ensure_ascii=False).encode() for r in rows],
                        type=pa.binary())
