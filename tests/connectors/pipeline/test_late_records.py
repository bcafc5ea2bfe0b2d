import json

import pyarrow as pa
import pytest

from kafka_eos.config.late_records import LateSpec
from kafka_eos.connectors.pipeline.late_records import (BOUND, ORIGINAL_TIME, ORIGINAL_VALUE, LateWatermarkError,
                                                        bound_expr, late_batch, late_fn, late_watermark_ms)
from kafka_eos.serde.decode_errors import DLQ_SCHEMA

TS = pa.timestamp("us", tz="UTC")
S = 1_000_000  # microseconds per second


def rows(times, bounds, headers=None, source_times=None):
    columns = {"key": pa.array([b"k%d" % i for i in range(len(times))], pa.binary()),
               ORIGINAL_VALUE: pa.array([b"v%d" % i for i in range(len(times))], pa.binary()),
               ORIGINAL_TIME: pa.array(source_times or [None] * len(times), TS),
               "topic": pa.array(["in"] * len(times)), "partition": pa.array([2] * len(times), pa.int32()),
               "offset": pa.array(range(10, 10 + len(times)), pa.int64()),
               "event_time": pa.array(times, TS), BOUND: pa.array(bounds, TS)}
    if headers is not None:
        columns["headers"] = pa.array(headers, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
    return pa.RecordBatch.from_pydict(columns)


def test_rows_whose_bound_is_at_or_behind_the_watermark_are_late_with_their_headers():
    batch = rows([10 * S, 50 * S, 70 * S], [60 * S, 60 * S, 120 * S],
                 headers=[[{"key": "trace", "value": b"t0"}], None, []])
    out = late_batch(batch, watermark_ms=60_000, topic="late", time_column="event_time", drops_null_time=True)
    assert out.schema == DLQ_SCHEMA
    assert out.column("key").to_pylist() == [b"k0", b"k1"] and out.column("value").to_pylist() == [b"v0", b"v1"]
    assert out.column("topic").to_pylist() == ["late", "late"]
    first = {h["key"]: h["value"] for h in out.column("headers")[0].as_py()}
    assert first == {"trace": b"t0", "kafka-eos.source.topic": b"in", "kafka-eos.source.partition": b"2",
                     "kafka-eos.source.offset": b"10", "kafka-eos.event-time": b"1970-01-01T00:00:10.000000Z",
                     "kafka-eos.watermark": b"1970-01-01T00:01:00.000000Z"}


def test_a_null_event_time_is_late_only_where_a_window_drops_it():
    batch = rows([None, 70 * S], [None, 120 * S])
    assert late_batch(batch, 60_000, "late", "event_time", drops_null_time=True).num_rows == 1
    assert late_batch(batch, 60_000, "late", "event_time", drops_null_time=False).num_rows == 0


def test_watermark_zero_makes_nothing_late():
    assert late_batch(rows([1 * S], [60 * S]), 0, "late", "event_time", True).num_rows == 0


def test_the_function_asks_the_watermark_of_the_running_batch():
    asked = []
    def watermark(checkpoint, batch_id, previous):
        asked.append((checkpoint, batch_id, previous))
        return 60_000
    run = late_fn("/cp", True, "late", "event_time", True, batch_id=lambda: 7, watermark_ms=watermark)
    [out] = list(run(iter([rows([10 * S], [60 * S])])))
    assert out.num_rows == 1 and asked == [("/cp", 7, True)]


def _offsets(directory, batch_id, watermark_ms):
    (directory / "offsets").mkdir(exist_ok=True)
    (directory / "offsets" / str(batch_id)).write_text(
        "v1\n" + json.dumps({"batchWatermarkMs": watermark_ms, "batchTimestampMs": 1}) + "\n{}\n")


def test_the_late_watermark_of_batch_n_is_the_one_planned_for_batch_n_minus_1(tmp_path):
    _offsets(tmp_path, 4, 1000)
    _offsets(tmp_path, 5, 2000)
    assert late_watermark_ms(str(tmp_path), 5) == 1000
    assert late_watermark_ms(str(tmp_path), 5, previous=False) == 2000
    assert late_watermark_ms(str(tmp_path), 0) == 0
    with pytest.raises(LateWatermarkError, match="offsets/2"):
        late_watermark_ms(str(tmp_path), 3)


@pytest.mark.parametrize("spec, sql", [
    (LateSpec("tumbling", "1 minute", "1 minute", "0 seconds"), "window(`t`, '1 minute', '1 minute', '0 seconds').end"),
    (LateSpec("sliding", "10 minutes", "5 minutes", "0 seconds"),
     "window(`t`, '5 minutes', '5 minutes', '0 seconds').start + CAST('10 minutes' AS INTERVAL)"),
    (LateSpec("session", "5 minutes"), "`t` + CAST('5 minutes' AS INTERVAL)"),
    (LateSpec("event_time"), "`t`"),
])
def test_bound_expressions(spec, sql):
    assert bound_expr(spec, "t") == sql


def test_a_late_record_keeps_its_source_records_timestamp():
    batch = rows([10 * S, 70 * S], [60 * S, 120 * S], source_times=[5 * S, 6 * S])
    out = late_batch(batch, 60_000, "late", "event_time", drops_null_time=True)
    assert out.column("timestamp").cast(pa.int64()).to_pylist() == [5 * S], "the source's, not the event time"
