"""``ValueSerde``: a picklable description of a value format, and the codecs it builds.

Invariants:
- A ``ValueSerde`` carries only plain data (format, schema text, registry settings, writer id),
  all resolved on the driver (``kafka_eos.connectors.pipeline.serde_resolve``), so it can be shipped to executors;
  codecs (and registry clients) are built there, once per Python worker.
- Every decoder returns (typed array, per-row error or None) of the same length as its input;
  every encoder returns a binary array, null for null.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import pyarrow as pa

from kafka_eos.serde.formats import DataFormat, Registry
from kafka_eos.serde.avro_serde import AvroDecoder, AvroEncoder
from kafka_eos.serde.json_serde import JsonDecoder, JsonEncoder


class ValueDecoder(Protocol):
    arrow_type: pa.DataType

    def decode(self, data: pa.Array) -> tuple[pa.Array, list]: ...


class ValueEncoder(Protocol):
    def encode(self, data: pa.Array) -> pa.Array: ...


@dataclass(frozen=True)
class ValueSerde:
    format: DataFormat = DataFormat.BYTES
    schema_text: str | None = None    # the (reader) schema: Avro-style JSON; with a registry, json: a JSON Schema
    registry: Registry | None = None  # set: Confluent wire format (Avro, Protobuf, JSON Schema)
    schema_id: int | None = None      # wire-format id written by the encoder
    message: str | None = None        # Protobuf: the message's (full) name; None: the file's first
    descriptors: bytes | None = None  # Protobuf: the compiled schema (a serialized FileDescriptorSet)

    def __post_init__(self) -> None:
        if self.format is DataFormat.AVRO and not self.schema_text:
            raise ValueError(f"format {self.format.value} needs a schema (resolve it on the driver first)")
        if self.format is DataFormat.PROTOBUF and not (self.descriptors or self.schema_text):
            raise ValueError("format protobuf needs a .proto schema (resolve it on the driver first)")


class BytesCodec:
    arrow_type = pa.binary()

    def decode(self, data: pa.Array) -> tuple[pa.Array, list]:
        return data.cast(pa.binary()), [None] * len(data)

    def encode(self, data: pa.Array) -> pa.Array:
        return data.cast(pa.binary())


class StringCodec:
    """UTF-8 text; a value that is not valid UTF-8 is that row's decode error."""
    arrow_type = pa.string()

    def decode(self, data: pa.Array) -> tuple[pa.Array, list]:
        try:
            return data.cast(pa.string()), [None] * len(data)
        except pa.ArrowInvalid:
            values: list[str | None] = []
            errors: list[str | None] = []
            for item in data.to_pylist():
                try:
                    values.append(None if item is None else item.decode("utf-8"))
                    errors.append(None)
                except UnicodeDecodeError as exc:
                    values.append(None)
                    errors.append(f"invalid UTF-8: {exc}")
            return pa.array(values, pa.string()), errors

    def encode(self, data: pa.Array) -> pa.Array:
        return data.cast(pa.string()).cast(pa.binary())


def _json_decoder(serde: ValueSerde) -> ValueDecoder:
    if not serde.schema_text:  # encoding JSON needs none (any column type is written as is)
        raise ValueError("format json needs a schema to decode (resolve it on the driver first)")
    if serde.registry is not None:  # a JSON Schema, the values in Confluent wire format
        from kafka_eos.serde.json_schema_serde import JsonSchemaDecoder
        from kafka_eos.serde.json_schema_registry import JsonSchemas
        return JsonSchemaDecoder(serde.schema_text, JsonSchemas(serde.registry))
    return JsonDecoder(serde.schema_text)


def _json_encoder(serde: ValueSerde) -> ValueEncoder:
    if serde.registry is None:
        return JsonEncoder()
    from kafka_eos.serde.json_schema_serde import JsonSchemaEncoder
    if serde.schema_id is None or not serde.schema_text:
        raise ValueError("JSON wire format needs the writer schema and its id (resolve them on the driver first)")
    return JsonSchemaEncoder(serde.schema_text, serde.schema_id)


def _proto_file_set(serde: ValueSerde) -> bytes:
    if serde.descriptors:
        return serde.descriptors
    from kafka_eos.serde.protobuf_schemas import compile_schema
    return compile_schema(serde.schema_text or "")


def _protobuf_decoder(serde: ValueSerde) -> ValueDecoder:
    from kafka_eos.serde.protobuf_serde import ProtobufDecoder
    writers = None
    if serde.registry is not None:
        from kafka_eos.serde.protobuf_registry import ProtobufSchemas
        writers = ProtobufSchemas(serde.registry)
    return ProtobufDecoder(_proto_file_set(serde), serde.message, writers)


def _protobuf_encoder(serde: ValueSerde) -> ValueEncoder:
    from kafka_eos.serde.protobuf_serde import ProtobufEncoder
    if serde.registry is not None and serde.schema_id is None:
        raise ValueError("Protobuf wire format needs the writer schema id (resolve it on the driver first)")
    return ProtobufEncoder(_proto_file_set(serde), serde.message, serde.schema_id if serde.registry is not None else None)


def _avro_decoder(serde: ValueSerde) -> ValueDecoder:
    writers = None
    if serde.registry is not None:
        from kafka_eos.serde.registry import RegistrySchemas
        writers = RegistrySchemas(serde.registry)
    return AvroDecoder(serde.schema_text or "", writers)


def _avro_encoder(serde: ValueSerde) -> ValueEncoder:
    if serde.registry is not None and serde.schema_id is None:
        raise ValueError("Avro wire format needs the writer schema id (resolve it on the driver first)")
    return AvroEncoder(serde.schema_text or "", serde.schema_id if serde.registry is not None else None)


@dataclass(frozen=True)
class FormatCodecs:
    """How one value format is read and written: each builds its codec from a ``ValueSerde``."""
    decoder: Callable[[ValueSerde], ValueDecoder]
    encoder: Callable[[ValueSerde], ValueEncoder]


# The one table of value formats: a new format is a DataFormat member plus one entry here.
FORMATS: dict[DataFormat, FormatCodecs] = {
    DataFormat.BYTES: FormatCodecs(lambda serde: BytesCodec(), lambda serde: BytesCodec()),
    DataFormat.STRING: FormatCodecs(lambda serde: StringCodec(), lambda serde: StringCodec()),
    DataFormat.JSON: FormatCodecs(_json_decoder, _json_encoder),
    DataFormat.AVRO: FormatCodecs(_avro_decoder, _avro_encoder),
    DataFormat.PROTOBUF: FormatCodecs(_protobuf_decoder, _protobuf_encoder),
}


def decoder(serde: ValueSerde) -> ValueDecoder:
    return FORMATS[serde.format].decoder(serde)


def encoder(serde: ValueSerde) -> ValueEncoder:
    return FORMATS[serde.format].encoder(serde)
