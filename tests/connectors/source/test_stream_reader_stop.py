"""The stream plans no new data while its stop marker exists (the graceful stop of a run)."""
from __future__ import annotations

import pytest
from kafka_eos.connectors.spark_compat import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StructType

from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options
from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
from kafka_eos.offsets import model

IN = [("in", 0), ("in", 1)]


class FakeKafka:
    """Partitions 0 and 1 of ``in``, records up to ``high``; counts the planning calls."""

    def __init__(self, high: int = 100) -> None:
        self.high, self.calls = high, 0

    def partitions(self, subscription):
        self.calls += 1
        return set(IN)

    def latest(self, tps):
        return {tp: self.high for tp in tps}

    def earliest(self, tps):
        return {tp: 0 for tp in tps}


def reader(tmp_path, **extra) -> KafkaStreamReader:
    options = {"kafka.bootstrap.servers": "b:9092", "subscribe": "in", "stopMarker": str(tmp_path / "stop"), **extra}
    stream = KafkaStreamReader(options, StructType())
    stream._kafka = FakeKafka()
    return stream


def test_without_the_marker_the_stream_plans_what_is_there(tmp_path):
    stream = reader(tmp_path)
    start = model.encode({tp: 10 for tp in IN})
    assert model.decode(stream.latestOffset(start, ReadAllAvailable())) == {tp: 100 for tp in IN}
    assert model.decode(stream.latestOffset(start, ReadMaxRows(20))) == {tp: 20 for tp in IN}


def test_once_the_marker_exists_the_stream_plans_no_new_data(tmp_path):
    stream = reader(tmp_path)
    start = model.encode({tp: 10 for tp in IN})
    (tmp_path / "stop").write_text("stop\n")
    assert stream.latestOffset(start, ReadAllAvailable()) == start, "the same JSON: Spark sees no new data"
    assert stream.latestOffset(start, ReadMaxRows(20)) == start
    assert stream._kafka.calls == 0, "nothing asked of Kafka while stopping"
    (tmp_path / "stop").unlink()
    assert model.decode(stream.latestOffset(start, ReadAllAvailable())) == {tp: 100 for tp in IN}


def test_a_new_query_stopping_still_records_its_start_in_an_empty_batch_0(tmp_path):
    stream = reader(tmp_path)
    initial = model.encode({tp: 10 for tp in IN}, initial=True)
    (tmp_path / "stop").write_text("stop\n")
    end = stream.latestOffset(initial, ReadAllAvailable())
    assert end != initial, "batch 0 runs: it writes the start to the offset log"
    assert model.decode(end) == {tp: 10 for tp in IN} and model.planned_start(end) == {tp: 10 for tp in IN}
    assert stream.partitions(initial, end) == [], "and reads nothing"
    assert stream.latestOffset(end, ReadAllAvailable()) == end, "then no new data"


def test_the_stop_marker_is_a_streaming_option():
    options = {"kafka.bootstrap.servers": "b:9092", "subscribe": "in", "StopMarker": "/tmp/x"}
    assert parse_source_options(options, streaming=True).stop_marker == "/tmp/x"
    assert parse_source_options({**options, "StopMarker": ""}, streaming=True).stop_marker is None
    with pytest.raises(SourceOptionError, match="stopMarker is for streaming"):
        parse_source_options(options, streaming=False)
