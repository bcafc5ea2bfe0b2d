"""Avro values <-> Arrow with fastavro: plain binary (schemaless) or Confluent wire format.

Invariants:
- Plain binary: every value is written with the configured schema (writer = reader).
- Wire format: the writer schema comes from the id in each value (``writer_schemas(id)``, a
  registry lookup cached per process, or a dict in tests); the configured schema is the reader
  schema, so Avro schema resolution handles evolution.
- A value must be consumed exactly: trailing bytes mean the wrong schema and are an error.
- A null value (tombstone) decodes to null; a failing value gives an error for its row only,
  an id the registry does not know included (``UnknownSchemaId``). A lookup that fails for
  another reason (``WriterSchemaUnavailable``: registry unreachable, credentials refused) says
  nothing about the record, so it is raised and fails the batch.
"""
from __future__ import annotations

import io
from typing import Any, Callable

import fastavro
import pyarrow as pa

from kafka_eos import KafkaEosError
from kafka_eos.serde.arrow_types import RowDecodeError, arrow_type, coercer, decode_rows, parse_schema
from kafka_eos.serde.wire_format import frame, unframe

WriterSchemas = Callable[[int], Any]


class UnknownSchemaId(KafkaEosError, LookupError):
    """The registry has no schema of a record's id: that record's decode error."""


class WriterSchemaUnavailable(KafkaEosError, RuntimeError):
    """A writer schema could not be looked up for a reason that is not the record's."""
Decoded = tuple[pa.Array, list]


def _read_one(data: bytes, writer: Any, reader: Any) -> Any:
    buffer = io.BytesIO(data)
    record = fastavro.schemaless_reader(buffer, writer, reader)
    left = len(data) - buffer.tell()
    if left:
        raise ValueError(f"{left} bytes left after the record: written with another schema "
                         "(or in wire format: then configure a schema registry)")
    return record


class AvroDecoder:
    def __init__(self, schema_text: str, writer_schemas: WriterSchemas | None = None) -> None:
        self.reader = parse_schema(schema_text)
        self.arrow_type = arrow_type(self.reader)
        self.writer_schemas = writer_schemas
        self._coerce = coercer(self.arrow_type)

    def _writer_and_body(self, data: bytes) -> tuple[Any, bytes]:
        if self.writer_schemas is None:
            return self.reader, data
        schema_id, body = unframe(data)
        return self.writer_schemas(schema_id), body

    def decode(self, data: pa.Array) -> Decoded:
        return decode_rows(data, self._read, self.arrow_type, self._coerce)

    def _read(self, item: bytes) -> Any:
        try:
            writer, body = self._writer_and_body(item)
            return _read_one(body, writer, self.reader)
        except WriterSchemaUnavailable:
            raise
        except UnknownSchemaId as exc:
            raise RowDecodeError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any failure to read bytes is this row's decode error
            raise RowDecodeError(f"invalid Avro: {type(exc).__name__}: {exc}") from None


class AvroEncoder:
    """Arrow column (of the schema's type) -> Avro binary, framed when ``schema_id`` is given."""

    def __init__(self, schema_text: str, schema_id: int | None = None) -> None:
        self.schema = parse_schema(schema_text)
        self.schema_id = schema_id

    def encode_one(self, record: Any) -> bytes:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, self.schema, record)
        body = buffer.getvalue()
        return body if self.schema_id is None else frame(self.schema_id, body)

    def encode(self, data: pa.Array) -> pa.Array:
        rows = data.to_pylist(maps_as_pydicts="strict")
        return pa.array([None if r is None else self.encode_one(r) for r in rows], type=pa.binary())
