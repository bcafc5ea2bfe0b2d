"""Offset map format: canonical, versioned, strict."""
import json

import pytest

from offsets.model import FORMAT_VERSION, OffsetFormatError, decode, encode


def test_round_trip_and_canonical_order():
    offsets = {("b", 10): 5, ("a", 2): 7, ("a", 10): 1, ("b", 0): 0}
    stored = encode(offsets)
    assert stored == {"v": FORMAT_VERSION, "topics": {"a": {"2": 7, "10": 1}, "b": {"0": 0, "10": 5}}}
    assert decode(json.loads(json.dumps(stored))) == offsets
    # equal maps built in another order give the same JSON text (Spark compares text)
    assert json.dumps(encode(dict(reversed(list(offsets.items()))))) == json.dumps(stored)


def test_empty_map():
    assert decode(encode({})) == {}


@pytest.mark.parametrize("stored", [
    {"v": 2, "topics": {}},
    {"topics": {"a": {"0": 1}}},
    {"v": 1},
    {"v": 1, "topics": {"a": [1, 2]}},
    {"v": 1, "topics": {"a": {"x": 1}}},
    {"v": 1, "topics": {"a": {"0": -1}}},
    {"v": 1, "topics": {"a": {"0": True}}},
])
def test_decode_refuses_unknown_or_bad(stored):
    with pytest.raises(OffsetFormatError):
        decode(stored)


def test_version_error_says_what_to_do():
    with pytest.raises(OffsetFormatError, match="new checkpointLocation"):
        decode({"v": 99, "topics": {}})


def test_encode_refuses_negative():
    with pytest.raises(OffsetFormatError, match="a-0"):
        encode({("a", 0): -1})
