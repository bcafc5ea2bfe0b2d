"""The stream reader for pyspark without admission control (4.0, 4.1): where its start comes from."""
from __future__ import annotations

import json

import pytest
from pyspark.sql.types import StructType

from kafka_eos.connectors.source.legacy_reader import LegacyKafkaStreamReader, OffsetLogScanError, own_line
from kafka_eos.connectors.source.options import SourceOptionError
from kafka_eos.offsets import model
from tests.connectors.source.test_stream_reader_stop import IN, FakeKafka as PlanningKafka



class FakeKafka(PlanningKafka):
    """Also lists ``in`` and resolves ``earliest`` (a new query's ``initialOffset``)."""

    def listing(self, subscription=None):
        return {"in": [0, 1]}


META = '{"batchWatermarkMs":0,"batchTimestampMs":1}'


def log_batch(checkpoint, batch: int, *lines: dict) -> None:
    offsets = checkpoint / "offsets"
    offsets.mkdir(parents=True, exist_ok=True)
    (offsets / str(batch)).write_text("\n".join(["v1", META, *map(json.dumps, lines)]))


def reader(checkpoint, high: int = 100, **extra) -> LegacyKafkaStreamReader:
    options = {"kafka.bootstrap.servers": "b:9092", "subscribe": "in", "startingOffsets": "earliest",
               "checkpointLocation": str(checkpoint), **extra}
    stream = LegacyKafkaStreamReader(options, StructType(), cores=2)
    stream._kafka = FakeKafka(high)
    return stream


def ends(stored: dict) -> dict:
    return model.decode(stored)


def test_a_new_query_starts_where_initial_offset_resolves_and_records_it(tmp_path):
    stream = reader(tmp_path)
    end0 = stream.latestOffset()
    assert ends(end0) == {tp: 100 for tp in IN} and model.planned_start(end0) == {tp: 0 for tp in IN}
    assert stream.latestOffset() == end0, "nothing new: the same JSON, so Spark plans no batch"
    stream._kafka.high = 150
    assert ends(stream.latestOffset()) == {tp: 150 for tp in IN}, "the next batch starts at the last end"


def test_max_offsets_per_trigger_caps_every_batch_from_the_start_it_keeps(tmp_path):
    stream = reader(tmp_path, maxOffsetsPerTrigger="40")
    seen = [ends(stream.latestOffset()) for _ in range(3)]
    assert seen == [{tp: 20 for tp in IN}, {tp: 40 for tp in IN}, {tp: 60 for tp in IN}]


def test_a_restart_after_a_committed_batch_starts_at_the_newest_logged_end(tmp_path):
    logged = model.encode({tp: 70 for tp in IN}, tasks=2)
    log_batch(tmp_path, 0, model.encode({tp: 30 for tp in IN}, start={tp: 0 for tp in IN}, tasks=2))
    log_batch(tmp_path, 1, logged)
    stream = reader(tmp_path, maxOffsetsPerTrigger="10")
    assert ends(stream.latestOffset()) == {tp: 75 for tp in IN}
    assert reader(tmp_path, high=70).latestOffset() == logged, "no new data: the logged JSON as it is"


def test_a_rerun_batch_tells_the_start_before_any_log_is_read(tmp_path):
    stream = reader(tmp_path / "nowhere", maxOffsetsPerTrigger="10")
    start, end = model.encode({tp: 10 for tp in IN}), model.encode({tp: 20 for tp in IN}, tasks=2)
    stream.partitions(start, end)
    assert ends(stream.latestOffset()) == {tp: 25 for tp in IN}


def test_each_scan_finds_its_own_line_by_its_name(tmp_path):
    log_batch(tmp_path, 3, model.with_scan(model.encode({tp: 50 for tp in IN}), "output"),
              model.with_scan(model.encode({tp: 40 for tp in IN}), "dlq"))
    output, dlq = reader(tmp_path, high=50, scanName="output"), reader(tmp_path, high=50, scanName="dlq")
    assert ends(output.latestOffset()) == {tp: 50 for tp in IN}
    assert model.scan_of(dlq.latestOffset()) == "dlq" and ends(dlq.latestOffset()) == {tp: 50 for tp in IN}


def test_two_unnamed_scans_that_differ_are_refused_with_the_fix(tmp_path):
    lines = [json.dumps(model.encode({tp: n for tp in IN})) for n in (50, 40)]
    with pytest.raises(OffsetLogScanError, match="scanName"):
        own_line(lines, None, 3)
    assert own_line(lines[:1] * 2, None, 3) == model.encode({tp: 50 for tp in IN}), "equal lines are one start"


def test_an_offset_log_without_a_kafka_eos_line_is_refused(tmp_path):
    with pytest.raises(OffsetLogScanError, match="checkpointLocation must be this query's own"):
        own_line(['{"logOffset": 4}'], None, 7)


def test_an_end_planned_before_scans_were_named_is_still_found(tmp_path):
    old = model.encode({tp: 50 for tp in IN})
    assert own_line([json.dumps(old)], "dlq", 2) == old


def test_without_a_checkpoint_location_the_reader_is_refused_naming_the_option():
    options = {"kafka.bootstrap.servers": "b:9092", "subscribe": "in"}
    with pytest.raises(SourceOptionError, match="needs option checkpointLocation"):
        LegacyKafkaStreamReader(options, StructType())


def test_an_available_now_target_bounds_every_end(tmp_path):
    stream = reader(tmp_path, availableNowTarget=json.dumps({"in": {"0": 60, "1": 80}}))
    assert ends(stream.latestOffset()) == {("in", 0): 60, ("in", 1): 80}
    stream._kafka.high = 500
    end = stream.latestOffset()
    assert ends(end) == {("in", 0): 60, ("in", 1): 80} and stream.latestOffset() == end


def test_a_restart_takes_the_entry_the_run_read_in_the_driver_without_reading_the_checkpoint(tmp_path):
    """A checkpoint this worker's Python cannot read (hdfs://, gs://): the run hands its newest
    offset-log entry over (option offsetLogEntry) and the source resumes from it."""
    logged = model.encode({tp: 70 for tp in IN}, tasks=2)
    text = "\n".join(["v1", META, json.dumps(logged)])
    entry = json.dumps({"batch": 1, "text": text})
    stream = reader("hdfs://nn:8020/nowhere", maxOffsetsPerTrigger="10", offsetLogEntry=entry)
    assert ends(stream.latestOffset()) == {tp: 75 for tp in IN}
    new = reader("hdfs://nn:8020/nowhere", offsetLogEntry=json.dumps({"batch": None}))
    assert model.planned_start(new.latestOffset()) == {tp: 0 for tp in IN}, "no entry: a new query's start"
