"""The Confluent Protobuf wire format: the byte layouts Confluent documents, both directions."""
from __future__ import annotations

import io

import pytest

from kafka_eos.serde.protobuf_wire import (WireFormatError, decode_indexes, encode_indexes, frame, unframe, unzigzag,
                                           zigzag)


@pytest.mark.parametrize("indexes, expected", [
    ((0,), b"\x00"),                     # the first message: the single-byte shorthand
    ((1,), b"\x02\x02"),                 # count 1, index 1 (zigzag 2)
    ((0, 0), b"\x04\x00\x00"),           # a nested message: the shorthand is only for [0]
    ((1, 0), b"\x04\x02\x00"),           # second top-level message's first nested one
    ((2, 64), b"\x04\x04\x80\x01"),      # zigzag(64) = 128: a two-byte varint
])
def test_message_index_layouts(indexes, expected):
    assert encode_indexes(indexes) == expected
    assert decode_indexes(expected) == (indexes, len(expected))


def test_a_framed_value_is_magic_id_indexes_then_body():
    value = frame(258, (1, 0), b"\x08\x96\x01")
    assert value == b"\x00\x00\x00\x01\x02" + b"\x04\x02\x00" + b"\x08\x96\x01"
    assert unframe(value) == (258, (1, 0), b"\x08\x96\x01")
    assert unframe(frame(7, (0,), b"")) == (7, (0,), b"")


def test_zigzag_matches_protobufs_sint_encoding():
    pairs = [(0, 0), (-1, 1), (1, 2), (-2, 3), (2147483647, 4294967294), (-2147483648, 4294967295)]
    for n, z in pairs:
        assert zigzag(n) == z and unzigzag(z) == n


def test_confluents_own_encoder_writes_the_same_bytes():
    from confluent_kafka.schema_registry._sync.protobuf import ProtobufSerializer
    for indexes in ([0], [1], [0, 0], [3, 1, 2], [300]):
        buffer = io.BytesIO()
        ProtobufSerializer._encode_varints(buffer, indexes)
        assert encode_indexes(tuple(indexes)) == buffer.getvalue()


@pytest.mark.parametrize("data, reason", [
    (b"\x01\x00\x00\x00\x01\x00", "magic byte"),
    (b"\x00\x00\x00", "shorter than the 5-byte"),
    (b"\x00\x00\x00\x00\x01\x04\x02", "truncated"),        # count 2, one index
    (b"\x00\x00\x00\x00\x01\x03\x00", "message-index list of -2"),
    (b"\x00\x00\x00\x00\x01\x02\x01", "negative message index"),
    (b"\x00\x00\x00\x00\x01" + b"\xff" * 11, "longer than 10 bytes"),
])
def test_bytes_that_are_not_framed_say_why(data, reason):
    with pytest.raises(WireFormatError, match=reason):
        unframe(data)


def test_an_empty_or_negative_index_list_is_refused():
    with pytest.raises(WireFormatError):
        encode_indexes(())
    with pytest.raises(WireFormatError):
        encode_indexes((0, -1))
