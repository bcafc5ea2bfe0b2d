"""Offset map format: canonical, versioned, strict."""
import json

import pytest

from kafka_eos.offsets.model import FORMAT_VERSION, OffsetFormatError, decode, encode, is_initial, planned_start


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


def test_the_start_of_the_first_batch_is_carried_by_its_end():
    start = {("a", 0): 3, ("a", 1): 9}
    initial = encode(start, initial=True)
    assert is_initial(initial) and not is_initial(encode(start))
    end = encode({("a", 0): 5, ("a", 1): 9}, start=decode(initial))
    assert decode(end) == {("a", 0): 5, ("a", 1): 9}  # readers of format 1 see the end only
    assert planned_start(end) == start
    assert planned_start(encode(start)) is None


def test_a_batch_end_carries_its_task_count():
    from kafka_eos.offsets.model import planned_tasks
    end = encode({("a", 0): 5}, tasks=3)
    assert planned_tasks(end) == 3 and decode(end) == {("a", 0): 5}
    assert planned_tasks(encode({("a", 0): 5})) is None
    for bad in (0, -1, True, "2", 1.5):
        with pytest.raises(OffsetFormatError, match="task count"):
            planned_tasks({**end, "tasks": bad})
