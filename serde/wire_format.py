"""The Confluent wire format: magic byte 0, a 4-byte big-endian schema id, then the Avro body.

Pure logic (no registry): ``frame`` and ``unframe`` are exact inverses for ids 0..2**31-1.
"""
from __future__ import annotations

import struct

from kafka_eos import KafkaEosError

MAGIC = 0
HEADER = struct.Struct(">bI")
MAX_ID = 2**31 - 1


class WireFormatError(KafkaEosError, ValueError):
    """Bytes that are not a Confluent-framed message."""


def frame(schema_id: int, payload: bytes) -> bytes:
    if not 0 <= schema_id <= MAX_ID:
        raise WireFormatError(f"schema id {schema_id} is outside 0..{MAX_ID}")
    return HEADER.pack(MAGIC, schema_id) + payload


def unframe(data: bytes) -> tuple[int, bytes]:
    """(schema id, Avro body) of one message; WireFormatError says why it is not framed."""
    if len(data) < HEADER.size:
        raise WireFormatError(f"{len(data)} bytes is shorter than the 5-byte wire-format header")
    magic, schema_id = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise WireFormatError(f"magic byte {data[0]} is not 0: not Confluent wire format "
                              "(plain Avro? then drop the schema registry from the schema settings)")
    return schema_id, data[HEADER.size:]
