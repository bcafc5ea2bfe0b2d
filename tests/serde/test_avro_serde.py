"""Avro serde: plain binary with a schema, Confluent wire format with ids, schema evolution."""
from __future__ import annotations

import datetime as dt
import io
import json

import fastavro
import pyarrow as pa
import pytest

from kafka_eos.config.model import DataFormat, Registry
from kafka_eos.serde.avro_serde import AvroDecoder, AvroEncoder
from kafka_eos.serde.codecs import ValueSerde, decoder, encoder
from kafka_eos.serde.wire_format import WireFormatError, frame, unframe

UTC = dt.timezone.utc
V1 = {"type": "record", "name": "Click", "namespace": "t", "fields": [
    {"name": "page", "type": "string"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "meta", "type": {"type": "map", "values": "string"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "referrer", "type": ["null", "string"], "default": None}]}
ROW = {"page": "/home", "at": dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=UTC), "meta": {"k": "v"},
       "uid": "6f1c5a8e-6b7e-4f7c-9f59-2f1d7c0b9a11"}


def fastavro_bytes(schema: dict, record: dict) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), record)
    return buffer.getvalue()


def test_plain_binary_written_by_fastavro_decodes():
    decoded, errors = AvroDecoder(json.dumps(V1)).decode(pa.array([fastavro_bytes(V1, ROW), None], pa.binary()))
    assert errors == [None, None]
    assert decoded.to_pylist(maps_as_pydicts="strict") == [ROW, None]


def test_plain_binary_round_trip():
    text = json.dumps(V1)
    original = pa.array([ROW, None], AvroDecoder(text).arrow_type)
    encoded = AvroEncoder(text).encode(original)
    assert encoded[0].as_py() == fastavro_bytes(V1, ROW)
    decoded, errors = AvroDecoder(text).decode(encoded)
    assert errors == [None, None] and decoded.equals(original)


def test_wrong_or_truncated_bytes_fail_their_row_only():
    good = fastavro_bytes(V1, ROW)
    decoded, errors = AvroDecoder(json.dumps(V1)).decode(pa.array([good[:-3], good + b"xx", b"", good]))
    assert "invalid Avro" in errors[0] and "2 bytes left" in errors[1] and errors[2] is not None
    assert errors[3] is None and decoded.to_pylist()[:3] == [None, None, None]


def test_wire_format_frame_and_unframe():
    assert frame(7, b"body") == b"\x00\x00\x00\x00\x07body"
    assert unframe(frame(2**31 - 1, b"x")) == (2**31 - 1, b"x")
    with pytest.raises(WireFormatError, match="magic byte 1"):
        unframe(b"\x01\x00\x00\x00\x07body")
    with pytest.raises(WireFormatError, match="shorter"):
        unframe(b"\x00\x01")
    with pytest.raises(WireFormatError):
        frame(-1, b"")


def test_wire_format_uses_the_writer_schema_of_each_id():
    """Values written with v1 (id 1) and v2 (id 2) both decode with the v2 reader schema."""
    writers = {1: fastavro.parse_schema(V1), 2: fastavro.parse_schema(V2)}
    decoder_ = AvroDecoder(json.dumps(V2), writers.__getitem__)
    old = frame(1, fastavro_bytes(V1, ROW))
    new = frame(2, fastavro_bytes(V2, {**ROW, "referrer": "ads"}))
    decoded, errors = decoder_.decode(pa.array([old, new, frame(9, b""), fastavro_bytes(V1, ROW)]))
    rows = decoded.to_pylist(maps_as_pydicts="strict")
    assert rows[0] == {**ROW, "referrer": None} and rows[1] == {**ROW, "referrer": "ads"}
    assert errors[:2] == [None, None] and "KeyError" in errors[2] and "not Confluent wire format" in errors[3]


def test_wire_format_encoder_frames_with_the_resolved_id():
    text = json.dumps(V1)
    serde = ValueSerde(DataFormat.AVRO, text, Registry(url="http://unused:8081"), schema_id=42)
    encoded = encoder(serde).encode(pa.array([ROW], AvroDecoder(text).arrow_type))
    schema_id, body = unframe(encoded[0].as_py())
    assert schema_id == 42 and fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(V1)) == {
        **ROW, "uid": __import__("uuid").UUID(ROW["uid"])}


def test_value_serde_requires_what_each_format_needs():
    with pytest.raises(ValueError, match="needs a schema"):
        ValueSerde(DataFormat.AVRO)
    with pytest.raises(ValueError, match="Avro wire format needs the writer schema id"):
        encoder(ValueSerde(DataFormat.AVRO, json.dumps(V1), Registry(url="http://r:8081")))
    assert decoder(ValueSerde(DataFormat.BYTES)).arrow_type == pa.binary()


def test_string_codec_flags_invalid_utf8():
    decoded, errors = decoder(ValueSerde(DataFormat.STRING)).decode(pa.array([b"ok", b"\xff", None]))
    assert decoded.to_pylist() == ["ok", None, None] and errors[0] is None and "UTF-8" in errors[1]
    assert errors[2] is None
