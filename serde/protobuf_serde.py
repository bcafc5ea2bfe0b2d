"""Protobuf values <-> Arrow: plain Protobuf bytes, or the Confluent wire format with a registry.

Invariants:
- Plain: every value is the configured message, written with the configured schema.
- Wire format: each value names its writer schema (id) and message (indexes); it is parsed with
  that message's descriptor and its fields are taken by name into the configured (reader)
  message's type, so fields added or removed by a compatible change read as for Avro: unknown
  ones dropped, missing ones null.
- A null value (tombstone) decodes to null. A value that does not parse, an unknown schema id,
  or message indexes outside the writer's file are that row's error; a registry that fails for
  another reason (``WriterSchemaUnavailable``) fails the batch.
- The encoder writes the configured message, framed with the writer id and the message's
  indexes when ``schema_id`` is given; serialization is deterministic (map entries sorted).
"""
from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa
from google.protobuf.message import DecodeError

from kafka_eos.serde.arrow_types import RowDecodeError, coercer, decode_rows, encode_rows
from kafka_eos.serde.avro_serde import UnknownSchemaId, WriterSchemaUnavailable
from kafka_eos.serde.protobuf_schemas import ProtoSchema, ProtoSchemaError, message_class
from kafka_eos.serde.protobuf_types import message_type
from kafka_eos.serde.protobuf_values import fill, reader
from kafka_eos.serde.protobuf_wire import frame, unframe
from kafka_eos.serde.wire_format import WireFormatError

WriterSchemas = Callable[[int], ProtoSchema]
Decoded = tuple[pa.Array, list]


class ProtobufDecoder:
    def __init__(self, file_set: bytes, message: str | None, writer_schemas: WriterSchemas | None = None) -> None:
        self.schema = ProtoSchema(file_set)
        self.descriptor = self.schema.message(message)
        self.arrow_type = message_type(self.descriptor)
        self.writer_schemas = writer_schemas
        self._class = message_class(self.schema, self.descriptor.full_name)
        self._read_fields = reader(self.descriptor)
        # the writer's message may differ from the reader's: its fields are then taken by name
        self._coerce = coercer(self.arrow_type) if writer_schemas is not None else None

    def decode(self, data: pa.Array) -> Decoded:
        return decode_rows(data, self._read, self.arrow_type, self._coerce)

    def _parse(self, item: bytes) -> Any:
        if self.writer_schemas is None:
            return self._read_fields(self._class.FromString(item))
        schema_id, indexes, body = unframe(item)
        writer = self.writer_schemas(schema_id)
        descriptor = writer.message_at(indexes)
        return reader(descriptor)(message_class(writer, descriptor.full_name).FromString(body))

    def _read(self, item: bytes) -> Any:
        try:
            return self._parse(item)
        except WriterSchemaUnavailable:
            raise
        except (UnknownSchemaId, ProtoSchemaError, WireFormatError) as exc:
            raise RowDecodeError(str(exc)) from None
        except DecodeError as exc:
            raise RowDecodeError(f"invalid Protobuf: {exc} (not a {self.descriptor.full_name} message"
                                 f"{'' if self.writer_schemas else ', or in wire format: then configure a schema registry'})"
                                 ) from None
        except Exception as exc:  # noqa: BLE001 - any failure to read bytes is this row's decode error
            raise RowDecodeError(f"invalid Protobuf: {type(exc).__name__}: {exc}") from None


class ProtobufEncoder:
    """Arrow column (of the message's type) -> Protobuf bytes, framed when ``schema_id`` is given."""

    def __init__(self, file_set: bytes, message: str | None, schema_id: int | None = None) -> None:
        self.schema = ProtoSchema(file_set)
        self.descriptor = self.schema.message(message)
        self.schema_id = schema_id
        self.indexes = self.schema.indexes_of(self.descriptor)
        self._class = message_class(self.schema, self.descriptor.full_name)

    def encode_one(self, row: Any) -> bytes:
        body = fill(self._class(), row).SerializeToString(deterministic=True)
        return body if self.schema_id is None else frame(self.schema_id, self.indexes, body)

    def encode(self, data: pa.Array) -> pa.Array:
        return encode_rows(data, self.encode_one, lambda i, reason: (
            f"row {i} does not fit Protobuf message {self.descriptor.full_name}: {reason}. "
            "Cast the column in the transform to the message's field types"))
