"""Per-batch event-time records beside the sink log: create-only, versioned, read by batch, pruned."""
from __future__ import annotations

import json

import pytest

from kafka_eos.offsets.rewind import WindowSpec, plan_rewind
from kafka_eos.txn.log.event_times import (FOLDER, BatchTimes, from_progress, max_times, parse_time, prefix_bound,
                                           prune, read_times, record_batch)
from kafka_eos.txn.protocol.errors import SinkLogError

# the example of pyspark's StreamingQueryProgress.eventTime docstring (4.0 to 4.3)
PROGRESS = {"max": "2016-12-05T20:54:20.827Z", "min": "2016-12-05T20:54:20.827Z",
            "avg": "2016-12-05T20:54:20.827Z", "watermark": "2016-12-05T20:54:20.827Z"}
AT = 1_480_971_260_827


def test_spark_progress_times_read_as_epoch_milliseconds():
    assert parse_time("1970-01-01T00:00:00.000Z") == 0 and parse_time("1970-01-01T00:00:01.001Z") == 1_001
    assert parse_time(PROGRESS["max"]) == AT and parse_time("2016-12-05T20:54:20.827+00:00") == AT
    assert from_progress(4, PROGRESS) == BatchTimes(4, AT, AT, AT, "watermark_operator")
    # a batch without rows reports only the watermark; a query without one reports nothing
    assert from_progress(5, {"watermark": "1970-01-01T00:00:00.000Z"}) == BatchTimes(5, None, None, 0)
    assert from_progress(6, {}, "decoded") == BatchTimes(6, None, None, None, "decoded")


def test_a_record_is_one_file_per_batch_read_back_by_batch(tmp_path):
    log = str(tmp_path / "kafka-eos-sink")
    assert read_times(log) == {} and not (tmp_path / "kafka-eos-sink").exists()   # reading creates nothing
    for batch, high in [(0, 10), (1, None), (12, 30)]:
        assert record_batch(log, BatchTimes(batch, 1 if high else None, high, 5)) == (
            BatchTimes(batch, 1 if high else None, high, 5), True)
    assert sorted(p.name for p in (tmp_path / "kafka-eos-sink" / FOLDER).iterdir()) == [
        "000000000000.json", "000000000001.json", "000000000012.json"]
    stored = json.loads((tmp_path / "kafka-eos-sink" / FOLDER / "000000000012.json").read_text())
    assert stored == {"v": 1, "batch": 12, "min_ms": 1, "max_ms": 30, "watermark_ms": 5,
                      "coverage": "watermark_operator"}
    assert max_times(read_times(log)) == {0: 10, 1: None, 12: 30}
    assert list(read_times(log, from_batch=1)) == [1, 12]


def test_a_batch_recorded_again_keeps_its_first_record(tmp_path):
    log = str(tmp_path / "log")
    record_batch(log, BatchTimes(3, 1, 9, 0))
    assert record_batch(log, BatchTimes(3, 1, 99, 0)) == (BatchTimes(3, 1, 9, 0), False)
    assert read_times(log)[3].max_ms == 9


def test_another_format_is_refused_and_other_names_are_skipped(tmp_path):
    log = str(tmp_path / "log")
    record_batch(log, BatchTimes(1, 1, 2, 0))
    folder = tmp_path / "log" / FOLDER
    (folder / "notes.txt").write_text("x")
    (folder / ".000000000002.json.tmp").write_text("{")
    assert list(read_times(log)) == [1]
    (folder / "000000000002.json").write_text(json.dumps({"v": 2, "batch": 2}))
    with pytest.raises(SinkLogError, match="event-time record format 2 is not 1"):
        read_times(log)
    with pytest.raises(SinkLogError, match="format 2"):
        record_batch(log, BatchTimes(2, 1, 2, 0))


def test_a_record_states_its_coverage_and_its_times_together():
    with pytest.raises(ValueError, match="coverage 'plan'"):
        BatchTimes(1, 1, 2, 0, "plan")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="both known or both None"):
        BatchTimes(1, None, 2, 0)


def test_pruned_records_leave_a_bound_from_the_earliest_kept_watermark(tmp_path):
    log = str(tmp_path / "log")
    for batch, (high, mark) in enumerate([(12, 0), (19, 7), (26, 14), (33, 21), (40, 28)]):
        record_batch(log, BatchTimes(batch, high - 5, high, mark))
    assert prune(log, 2) == 2 and list(read_times(log)) == [2, 3, 4]
    kept = read_times(log)
    assert prefix_bound(kept, delay_ms=5) == 19   # batch 1's max: the watermark of batch 2 plus the delay
    assert prefix_bound({}, 5) is None and prefix_bound({0: BatchTimes(0, None, None, None)}, 5) is None
    starts = {b: {("in", 0): 10 * b} for b in kept}
    plan = plan_rewind(WindowSpec.tumbling(10), 28, max_times(kept), starts, {("in", 0): 50},
                       prefix_bound(kept, 5))
    assert (plan.rewind_batch, plan.offsets) == (2, {("in", 0): 20})   # W0 = 20: batch 2 holds 21..26
