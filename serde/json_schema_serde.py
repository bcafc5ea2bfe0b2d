"""JSON values with a JSON Schema in the Confluent wire format (magic byte, schema id, JSON text).

Invariants:
- Decoding: each value is validated against its writer schema (looked up by the id it
  carries) and then typed by the configured (reader) JSON Schema (``json_schema_types``):
  unknown properties dropped, missing ones null. A value that is not framed, not JSON, of an
  unknown id or not valid against its schema is that row's error, naming the failing path.
- Encoding writes each row as JSON (as ``JsonEncoder``), validates it against the configured
  schema and frames it with the writer id; a row that does not validate fails the batch with
  the row, the path and the rule it breaks.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import pyarrow as pa

from kafka_eos.serde.arrow_types import RowDecodeError, coercer, decode_rows, encode_rows
from kafka_eos.serde.avro_serde import UnknownSchemaId, WriterSchemaUnavailable
from kafka_eos.serde.json_schema_registry import validator
from kafka_eos.serde.json_schema_types import arrow_type, parse_json_schema
from kafka_eos.serde.json_serde import _default
from kafka_eos.serde.wire_format import WireFormatError, frame, unframe

Validators = Callable[[int], Any]


def first_error(check: Any, document: Any) -> str | None:
    """'<path>: <message>' of the first way ``document`` breaks the schema, or None."""
    from jsonschema.exceptions import best_match
    error = best_match(check.iter_errors(document))
    if error is None:
        return None
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    return f"{path or '(value)'}: {error.message[:200]} (rule {error.validator})"


class JsonSchemaDecoder:
    def __init__(self, schema_text: str, writer_schemas: Validators) -> None:
        self.arrow_type = arrow_type(parse_json_schema(schema_text))
        self.writer_schemas = writer_schemas
        self._coerce = coercer(self.arrow_type, json_input=True)

    def decode(self, data: pa.Array) -> tuple[pa.Array, list]:
        return decode_rows(data, self._read, self.arrow_type, self._coerce)

    def _read(self, item: bytes) -> Any:
        try:
            schema_id, body = unframe(item)
            check = self.writer_schemas(schema_id)
            document = json.loads(body)
        except WriterSchemaUnavailable:
            raise
        except (UnknownSchemaId, WireFormatError) as exc:
            raise RowDecodeError(str(exc)) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise RowDecodeError(f"invalid JSON: {exc}") from None
        broken = first_error(check, document)
        if broken is not None:
            raise RowDecodeError(f"does not match JSON Schema id {schema_id}: {broken}")
        if document is None:
            raise RowDecodeError("invalid JSON: the document is null, expected a value of the schema")
        return document


class JsonSchemaEncoder:
    """Arrow column -> framed JSON documents, each valid against the schema (null stays null)."""

    def __init__(self, schema_text: str, schema_id: int) -> None:
        self.check = validator(parse_json_schema(schema_text))
        self.schema_id = schema_id

    def encode_one(self, row: Any) -> bytes:
        text = json.dumps(row, default=_default, separators=(",", ":"), ensure_ascii=False)
        broken = first_error(self.check, json.loads(text))
        if broken is not None:
            raise ValueError(broken)
        return frame(self.schema_id, text.encode())

    def encode(self, data: pa.Array) -> pa.Array:
        return encode_rows(data, self.encode_one, lambda i, reason: (
            f"row {i} does not match the sink's JSON Schema (id {self.schema_id}): {reason}. "
            "Fix the transform's output, or the schema"))
