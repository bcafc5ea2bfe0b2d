"""Start/end offset options: parsing and resolution against a fake lookup."""
import pytest

from kafka_eos.offsets.spec import (OffsetSpecError, parse_global_timestamp, parse_offsets, parse_timestamps,
                          resolve)

TPS = {("t", 0), ("t", 1)}


class FakeLookup:
    def __init__(self):
        self.low = {("t", 0): 5, ("t", 1): 0}
        self.high = {("t", 0): 50, ("t", 1): 20}
        self.times = {("t", 0): 7, ("t", 1): None}

    def earliest(self, tps):
        return {tp: self.low[tp] for tp in tps}

    def latest(self, tps):
        return {tp: self.high[tp] for tp in tps}

    def for_times(self, query):
        return {tp: self.times[tp] for tp in query}


def test_earliest_latest():
    assert resolve(parse_offsets("startingOffsets", "earliest"), TPS, FakeLookup()) == {("t", 0): 5, ("t", 1): 0}
    assert resolve(parse_offsets("startingOffsets", " LATEST "), TPS, FakeLookup()) == {("t", 0): 50, ("t", 1): 20}


def test_json_offsets_with_sentinels():
    spec = parse_offsets("startingOffsets", '{"t": {"0": -2, "1": -1}}')
    assert resolve(spec, TPS, FakeLookup()) == {("t", 0): 5, ("t", 1): 20}
    spec = parse_offsets("startingOffsets", '{"t": {"0": 9, "1": 3}}')
    assert resolve(spec, TPS, FakeLookup()) == {("t", 0): 9, ("t", 1): 3}


def test_json_must_cover_every_partition():
    spec = parse_offsets("startingOffsets", '{"t": {"0": 1, "7": 2}}')
    with pytest.raises(OffsetSpecError, match=r"lacks t-1.*not being read: t-7"):
        resolve(spec, TPS, FakeLookup())


@pytest.mark.parametrize("text, match", [
    ("{bad", "not valid JSON"),
    ("middle", "not 'earliest'"),
    ('{"t": {"0": -3}}', "invalid"),
    ('{"t": {"x": 1}}', "not a number"),
    ('{"t": {"0": "1"}}', "whole number"),
    ('{"t": [0]}', "must map"),
])
def test_bad_offsets_options(text, match):
    with pytest.raises(OffsetSpecError, match=match):
        parse_offsets("startingOffsets", text)


def test_ending_refuses_earliest():
    with pytest.raises(OffsetSpecError, match="read nothing"):
        parse_offsets("endingOffsets", "earliest", ending=True)
    with pytest.raises(OffsetSpecError, match="-1 \\(latest\\)"):
        parse_offsets("endingOffsets", '{"t": {"0": -2}}', ending=True)


def test_timestamps_error_strategy_names_partition():
    spec = parse_timestamps("startingOffsetsByTimestamp", '{"t": {"0": 100, "1": 200}}')
    with pytest.raises(OffsetSpecError, match=r"t-1 \(timestamp 200\)"):
        resolve(spec, TPS, FakeLookup())


def test_timestamps_latest_strategy():
    spec = parse_timestamps("startingOffsetsByTimestamp", '{"t": {"0": 100, "1": 200}}')
    assert resolve(spec, TPS, FakeLookup(), timestamp_strategy="latest") == {("t", 0): 7, ("t", 1): 20}


def test_global_timestamp():
    lookup = FakeLookup()
    lookup.times[("t", 1)] = 3
    assert resolve(parse_global_timestamp("startingTimestamp", "1000"), TPS, lookup) == {("t", 0): 7, ("t", 1): 3}
    with pytest.raises(OffsetSpecError):
        parse_global_timestamp("startingTimestamp", "soon")


def test_resolve_nothing():
    assert resolve(parse_offsets("startingOffsets", "earliest"), set(), FakeLookup()) == {}
