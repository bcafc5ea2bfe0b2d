"""sink.timestamp_column at validate: what the file tells of the sink's rows (no Spark)."""
from __future__ import annotations

from kafka_eos.connectors.pipeline.builder import passes_through, writer_options
from kafka_eos.connectors.sink.options import sink_config
from tests.factories import loaded, problems, valid


def _untransformed(data: dict, **sink) -> dict:
    data.pop("transform")
    data["sink"].update(sink)
    return data


def paths(found) -> list[tuple[str, str]]:
    return [(v.path, v.message) for v in found if v.path.startswith("sink.timestamp")]


def test_the_default_is_the_rows_timestamp_column_and_null_the_producers_clock(tmp_path):
    assert loaded(tmp_path).sink.timestamp_column == "timestamp"
    assert loaded(tmp_path, lambda d: d["sink"].update(timestamp_column=None)).sink.timestamp_column is None
    assert paths(problems(tmp_path, valid(tmp_path))) == [], "a transform's rows: Spark tells, at the build"


def test_a_source_column_that_is_not_a_timestamp_or_long_is_refused_naming_it(tmp_path):
    found = paths(problems(tmp_path, _untransformed(valid(tmp_path), timestamp_column="partition")))
    assert found == [("sink.timestamp_column", "column 'partition' is int: a record timestamp is a timestamp or a "
                                               "long (epoch ms)")]
    assert "no column 'ts'" in paths(problems(tmp_path, _untransformed(valid(tmp_path), timestamp_column="ts")))[0][1]
    assert paths(problems(tmp_path, _untransformed(valid(tmp_path), timestamp_column="value.created"))) == [], \
        "a decoded value's field: its type is checked at the build"
    assert paths(problems(tmp_path, _untransformed(valid(tmp_path), timestamp_column=""))) == \
        [("sink.timestamp_column", "is empty")]


def _copy(data: dict) -> None:
    data["source"].pop("schema")
    data["source"]["format"] = data["sink"]["format"] = "bytes"
    data.pop("transform")
    data["errors"] = {"on_decode_error": "fail"}


def test_a_copy_keeps_its_records_timestamps_unless_told_otherwise(tmp_path):
    copy = loaded(tmp_path, _copy)
    assert passes_through(copy), "the offset-range path copies each record's timestamp"
    assert "copyTimestamps" not in writer_options(copy, once=True)
    own_clock = loaded(tmp_path, lambda d: (_copy(d), d["sink"].update(timestamp_column=None)))
    assert passes_through(own_clock), "null: still the offset-range path"
    assert writer_options(own_clock, once=True)["copyTimestamps"] == "false", "its records on the producer's clock"
    assert sink_config(writer_options(own_clock, once=True)).copy_timestamps is False
