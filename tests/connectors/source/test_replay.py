"""Replay of a recorded offset log (pure logic over checkpoint files written here)."""
from __future__ import annotations

import json

import pytest

from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options
from kafka_eos.connectors.source.replay import ReplayError, ReplaySpec, recorded_end

META = '{"batchWatermarkMs":0,"batchTimestampMs":1}'


def _end(*offsets: int) -> dict:
    return {"v": 1, "topics": {"in": {str(p): o for p, o in enumerate(offsets)}}}


def _write(checkpoint, batch: int, *scans: dict) -> None:
    folder = checkpoint / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(batch)).write_text("\n".join(["v1", META, *(json.dumps(s) for s in scans)]))


def test_each_batch_ends_where_the_recorded_run_ended_it_and_a_batch_without_data_stays_one(tmp_path):
    recorded, own = tmp_path / "recorded", tmp_path / "own"
    for batch, end in enumerate([_end(5, 5), _end(9, 5), _end(9, 5), _end(12, 7)]):
        _write(recorded, batch, end)
    spec = ReplaySpec(str(recorded), str(own), through=3)
    _write(own, 0, _end(5, 5))
    assert recorded_end(spec, _end(5, 5)) == _end(9, 5)
    _write(own, 1, _end(9, 5))
    assert recorded_end(spec, _end(9, 5)) == _end(9, 5), "batch 2 planned no new data; Spark decides to run it"
    _write(own, 2, _end(9, 5))
    assert recorded_end(spec, _end(9, 5)) == _end(12, 7)
    _write(own, 3, _end(12, 7))
    assert recorded_end(spec, _end(12, 7)) == _end(12, 7), "past the recorded log: no new data"
    assert recorded_end(ReplaySpec(str(recorded), str(own), through=2), _end(12, 7)) == _end(12, 7)


def test_scans_are_told_apart_by_their_start_and_an_ambiguous_one_is_refused(tmp_path):
    recorded, own = tmp_path / "recorded", tmp_path / "own"
    _write(recorded, 0, _end(5), _end(6))
    _write(recorded, 1, _end(8), _end(9))
    _write(own, 0, _end(5), _end(6))
    spec = ReplaySpec(str(recorded), str(own), through=5)
    assert recorded_end(spec, _end(6)) == _end(9) and recorded_end(spec, _end(5)) == _end(8)
    _write(own, 0, _end(5), _end(5))
    with pytest.raises(ReplayError, match="batch 1: the recorded offset log has 2 ends"):
        recorded_end(spec, _end(5))


def test_the_option_is_for_streams_and_names_its_shape():
    base = {"kafka.bootstrap.servers": "b:9092", "subscribe": "in"}
    spec = ReplaySpec("/a", "/b", 4)
    assert parse_source_options({**base, "replayOffsetLog": spec.text()}, streaming=True).replay == spec
    with pytest.raises(SourceOptionError, match="streaming queries"):
        parse_source_options({**base, "replayOffsetLog": spec.text()}, streaming=False)
    with pytest.raises(SourceOptionError, match='give {"recorded"'):
        parse_source_options({**base, "replayOffsetLog": "/a"}, streaming=True)


def test_a_replay_never_moves_the_pipelines_consumer_group(tmp_path):
    """verify --recompute replays a pipeline whose source publishes progress to kafka.group.id: the
    replay's commits must not move that group back to old batches."""
    from pyspark.sql.types import StructType

    from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
    from kafka_eos.offsets import model

    class Groups:
        def __init__(self) -> None:
            self.commits: list = []

        def commit_group(self, group, offsets) -> None:
            self.commits.append((group, offsets))

    spec = ReplaySpec(str(tmp_path / "recorded"), str(tmp_path / "into"), 3)
    options = {"kafka.bootstrap.servers": "b:9092", "subscribe": "in", "kafka.group.id": "lag"}
    for extra, published in (({}, 1), ({"replayOffsetLog": spec.text()}, 0)):
        stream = KafkaStreamReader({**options, **extra}, StructType())
        stream._kafka = Groups()  # type: ignore[assignment]
        stream.commit(model.encode({("in", 0): 5}))
        assert len(stream._kafka.commits) == published
