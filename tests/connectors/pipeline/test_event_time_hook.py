"""The runner's event-time hook: each batch's progress eventTime becomes its record beside the sink
log, for stateful pipelines with a watermark only; failures are warnings; pruning follows the sink log."""
from __future__ import annotations

import json
from types import SimpleNamespace

from kafka_eos.connectors.pipeline import event_time_hook
from kafka_eos.connectors.pipeline.event_time_hook import EventTimeRecorder, records_event_times, recorder_for
from kafka_eos.connectors.pipeline.progress import batch_report, sink_log_location
from kafka_eos.offsets import model
from kafka_eos.txn.log.event_times import BatchTimes, read_times, start_of
from tests.factories import loaded

WINDOWED = "SELECT key, COUNT(*) AS value FROM source GROUP BY window(event_time, '1 minute'), key"
WATERMARK = {"column": "event_time", "expression": "timestamp_millis(value.id)", "delay": "30 seconds"}


def progress(batch: int, event_time: dict | None) -> SimpleNamespace:
    """What the reporter reads of pyspark's StreamingQueryProgress."""
    return SimpleNamespace(batchId=batch, batchDuration=5, numInputRows=3, stateOperators=[],
                           durationMs={"addBatch": 1}, eventTime=event_time)


def windowed(data: dict) -> None:
    data["transform"] = {"sql": WINDOWED, "watermark": WATERMARK}


def test_a_batch_s_progress_event_time_becomes_its_record(tmp_path):
    cfg = loaded(tmp_path, windowed)
    lines: list[str] = []
    [recorder] = recorder_for(cfg, lines.append)
    times = {"min": "1970-01-01T00:01:00.000Z", "max": "1970-01-01T00:02:00.500Z", "avg": "1970-01-01T00:01:30.000Z",
             "watermark": "1970-01-01T00:00:30.000Z"}
    recorder(batch_report(progress(3, times), 3, None, None))
    recorder(batch_report(progress(4, {"watermark": "1970-01-01T00:01:30.500Z"}), 0, None, None))  # no rows
    recorder(batch_report(progress(5, None), 0, None, None))  # no eventTime: no record (unknown: replays more)
    assert read_times(sink_log_location(cfg)) == {3: BatchTimes(3, 60_000, 120_500, 30_000),
                                                  4: BatchTimes(4, None, None, 90_500)}
    # a replayed batch keeps its record; a different report of it is one warning, the record stays
    recorder(batch_report(progress(3, {**times, "max": "1970-01-01T00:09:00.000Z"}), 3, None, None))
    recorder(batch_report(progress(3, {**times, "max": "1970-01-01T00:09:00.000Z"}), 3, None, None))
    assert read_times(sink_log_location(cfg))[3].max_ms == 120_500
    assert len(lines) == 1 and "differ from its record" in lines[0], lines


def test_only_stateful_pipelines_with_a_watermark_record(tmp_path):
    assert records_event_times(loaded(tmp_path, windowed))
    assert not records_event_times(loaded(tmp_path))  # stateless: a savepoint restarts at its end offsets
    no_watermark = loaded(tmp_path, lambda d: d["transform"].update(sql=WINDOWED))
    assert not records_event_times(no_watermark) and recorder_for(no_watermark, print) == []


def test_a_store_failure_is_a_warning_never_a_failed_batch(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")  # the sink log's location is a file: no folder can be made in it
    lines: list[str] = []
    recorder = EventTimeRecorder(str(blocked), lines.append)
    for batch in (1, 2):
        recorder(batch_report(progress(batch, {"watermark": "1970-01-01T00:00:00.000Z"}), 0, None, None))
    assert len(lines) == 1 and "batch 1's event times were not recorded" in lines[0], lines


def test_records_older_than_the_sink_log_s_oldest_batch_are_pruned(tmp_path, monkeypatch):
    log = str(tmp_path / "log")
    kept = SimpleNamespace(batch_ids=lambda: [7, 8, 9, 10])
    monkeypatch.setattr(event_time_hook, "SinkLogReader", lambda location: kept)
    recorder = EventTimeRecorder(log, print, prune_every=5)
    for batch in range(11):
        recorder(batch_report(progress(batch, {"watermark": "1970-01-01T00:00:00.000Z"}), 0, None, None))
    assert sorted(read_times(log)) == [7, 8, 9, 10]  # pruned at batches 5 and 10, below the oldest kept (7)
    assert recorder.prune() == 0


def test_the_record_keeps_where_the_batch_started(tmp_path):
    log = str(tmp_path / "log")
    recorder = EventTimeRecorder(log, print)
    first = SimpleNamespace(startOffset=None, endOffset=json.dumps(model.encode({("in", 0): 9}, start={("in", 0): 2})))
    later = SimpleNamespace(startOffset=json.dumps(model.encode({("in", 0): 9, ("in", 1): 4})),
                            endOffset=json.dumps(model.encode({("in", 0): 20, ("in", 1): 8})))
    odd = SimpleNamespace(startOffset="not offsets", endOffset=None)
    for batch, source in enumerate([first, later, odd]):
        at = progress(batch, {"watermark": "1970-01-01T00:00:00.000Z"})
        at.sources = [source]
        recorder(batch_report(at, 0, None, None))
    kept = read_times(log)
    assert start_of(kept[0]) == {("in", 0): 2}  # batch 0: the start it was planned from
    assert start_of(kept[1]) == {("in", 0): 9, ("in", 1): 4} and kept[1].start == {"in": {"0": 9, "1": 4}}
    assert kept[2].start is None  # not kafka-eos's offsets: not recorded (the offset log's are used)


def source_progress(start: dict | None, end: dict) -> dict:
    """A source's entry of Spark's progress JSON: the offsets parsed (JSON objects), as Spark writes them."""
    return {"description": "kafka-eos", "startOffset": start, "endOffset": end, "latestOffset": end,
            "numInputRows": 3, "inputRowsPerSecond": 1.0, "processedRowsPerSecond": 1.0, "metrics": {}}


def record_of(tmp_path, sources: list) -> dict:
    """The start each batch's record keeps, batch i having read through ``sources[i]``."""
    log = str(tmp_path / "log")
    recorder = EventTimeRecorder(log, print)
    for batch, source in enumerate(sources):
        at = progress(batch, {"watermark": "1970-01-01T00:00:00.000Z"})
        at.sources = [source]
        recorder(batch_report(at, 0, None, None))
    return {batch: start_of(times) for batch, times in read_times(log).items()}


FIRST = source_progress(None, model.encode({("in", 0): 9}, start={("in", 0): 2}))
LATER = source_progress(model.encode({("in", 0): 9, ("in", 1): 4}), model.encode({("in", 0): 20, ("in", 1): 8}))
STARTS = {0: {("in", 0): 2}, 1: {("in", 0): 9, ("in", 1): 4}}


def test_the_start_is_kept_from_pyspark_4_0_and_4_1_s_progress_a_python_repr_of_the_offsets(tmp_path):
    """pyspark 4.0/4.1's ``SourceProgress.fromJson`` keeps ``str(j["startOffset"])``: a dict's repr
    (``'None'`` for batch 0's absent start), not JSON. Before: every record without a start, so a
    savepoint's table and verify's reach-back had no batch past Spark's offset log."""
    as_41 = [SimpleNamespace(startOffset=str(s["startOffset"]), endOffset=str(s["endOffset"])) for s in (FIRST, LATER)]
    assert as_41[0].startOffset == "None" and as_41[1].startOffset.startswith("{'v': 1")
    assert record_of(tmp_path, as_41) == STARTS


def test_the_start_is_kept_from_the_installed_pyspark_s_own_source_progress(tmp_path):
    """Through this pyspark's own ``SourceProgress.fromJson`` (make matrix runs this on 4.0-4.2)."""
    from pyspark.sql.streaming.listener import SourceProgress
    assert record_of(tmp_path, [SourceProgress.fromJson(FIRST), SourceProgress.fromJson(LATER)]) == STARTS


def test_an_offset_of_the_progress_is_json_text_whatever_the_pyspark():
    from kafka_eos.connectors.pipeline.progress import offset_json
    json_text = json.dumps(model.encode({("in", 0): 9}))
    for given in (json_text, str(json.loads(json_text)), json.loads(json_text)):
        assert json.loads(offset_json(given)) == model.encode({("in", 0): 9}), given
    assert [offset_json(x) for x in (None, "None", "null")] == [None, None, None]
    assert offset_json("not offsets") == "not offsets"  # neither form: kept, and the hook records no start


def test_in_a_kafka_store_the_records_are_written_as_the_runner_role(tmp_path, monkeypatch):
    """A command beside the run writes as the operator role: had the hook written as the process's
    default (operator), a `kafka-eos verify` would fence it and the run would record no more."""
    from kafka_eos.txn.log import stores
    from kafka_eos.txn.log.kafka_store import StoreRole
    from tests.store_fakes import FakeWriter, fake_kafka
    records = fake_kafka(monkeypatch)
    next(records)
    location = stores.kafka_records_root("p", str(tmp_path / "ck")) + "/kafka-eos-sink"
    stores.register(location, {"bootstrap.servers": "unused:1"}, "p")
    recorder = EventTimeRecorder(location, lambda line: None)
    recorder(batch_report(progress(0, {"min": "1970-01-01T00:01:00.000Z", "max": "1970-01-01T00:01:00.000Z",
                                       "avg": "1970-01-01T00:01:00.000Z", "watermark": "1970-01-01T00:00:00.000Z"}),
                          1, None, None))
    assert [role for _, role, _, _ in FakeWriter.opened] == [StoreRole.RUNNER], FakeWriter.opened
    assert list(read_times(location)) == [0]
    next(records, None)
