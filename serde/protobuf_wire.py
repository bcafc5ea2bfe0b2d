"""The Confluent wire format for Protobuf: magic byte 0, 4-byte big-endian schema id, the
message-index list, then the Protobuf message.

The message-index list says which message of the schema's file the body is: the index of a
top-level message, then of each nested message down to it. It is written as a count then the
indexes, each a zigzag varint; the list ``[0]`` (the file's first message, the common case) is
written as the single byte 0 (a count of zero).

Pure logic (no registry): ``frame`` and ``unframe`` are exact inverses.
"""
from __future__ import annotations

from kafka_eos.serde.wire_format import WireFormatError, frame as frame_header, unframe as unframe_header

MessageIndexes = tuple[int, ...]
MAX_DEPTH = 256   # more nesting than any real schema: bytes that claim it are not a message-index list


def zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def unzigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def write_varint(value: int, out: bytearray) -> None:
    """An unsigned varint (7 bits a byte, least significant first)."""
    if value < 0:
        raise WireFormatError(f"varint {value} is negative")
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the unsigned varint at ``pos``."""
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise WireFormatError("the message-index list ends inside a varint (truncated bytes?)")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireFormatError("a varint of the message-index list is longer than 10 bytes")


def encode_indexes(indexes: MessageIndexes) -> bytes:
    if not indexes:
        raise WireFormatError("a message-index list names at least one message")
    if any(i < 0 for i in indexes):
        raise WireFormatError(f"message indexes {list(indexes)} must not be negative")
    if tuple(indexes) == (0,):
        return b"\x00"
    out = bytearray()
    write_varint(zigzag(len(indexes)), out)
    for index in indexes:
        write_varint(zigzag(index), out)
    return bytes(out)


def decode_indexes(data: bytes, pos: int = 0) -> tuple[MessageIndexes, int]:
    """(message indexes, position of the Protobuf body) of the list starting at ``pos``."""
    count, pos = read_varint(data, pos)
    count = unzigzag(count)
    if count == 0:
        return (0,), pos
    if not 0 < count <= MAX_DEPTH:
        raise WireFormatError(f"message-index list of {count} entries: not Confluent Protobuf framing")
    indexes = []
    for _ in range(count):
        value, pos = read_varint(data, pos)
        index = unzigzag(value)
        if index < 0:
            raise WireFormatError(f"negative message index {index}: not Confluent Protobuf framing")
        indexes.append(index)
    return tuple(indexes), pos


def frame(schema_id: int, indexes: MessageIndexes, body: bytes) -> bytes:
    return frame_header(schema_id, encode_indexes(indexes) + body)


def unframe(data: bytes) -> tuple[int, MessageIndexes, bytes]:
    """(schema id, message indexes, Protobuf body); WireFormatError says why it is not framed."""
    schema_id, rest = unframe_header(data)
    indexes, pos = decode_indexes(rest)
    return schema_id, indexes, rest[pos:]
