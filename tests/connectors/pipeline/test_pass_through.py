"""A pipeline that copies records as they are runs with offset-range rows (the sink reads them)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_eos.connectors.pipeline.builder import passes_through, stream_source_options, writer_options
from kafka_eos.connectors.pipeline.progress import ProgressReporter
from tests.factories import loaded


def copy(data: dict) -> None:
    data["source"].pop("schema")
    data["source"]["format"] = "bytes"
    data["sink"]["format"] = "bytes"
    data.pop("transform")
    data["errors"] = {"on_decode_error": "fail"}


@pytest.mark.parametrize("change", [
    lambda d: d["source"].update(format="json", schema={"inline": '{"type": "record", "name": "r", "fields": []}'}),
    lambda d: d.update(transform={"sql": "SELECT key, value FROM source"}),
    lambda d: d["source"].update(key_format="string"),
    lambda d: d["sink"].update(value_column="v"),
    lambda d: d["source"].update(include_headers=True),                  # headers read, not written
    lambda d: d["source"].update(options={"emit": "records"}),           # the user's own choice
    lambda d: d.update(errors={"on_decode_error": "dlq", "dlq_topic": "in-dlq"}),   # a second scan
], ids=["json", "transform", "string-key", "value-column", "headers-dropped", "emit-records", "dlq"])
def test_what_is_not_a_plain_copy_keeps_record_rows(tmp_path, change):
    assert passes_through(loaded(tmp_path, copy))
    cfg = loaded(tmp_path, lambda d: (copy(d), change(d)))
    assert not passes_through(cfg)


def test_a_pipeline_with_a_transform_reads_records_and_gives_the_sink_no_source_options(tmp_path):
    cfg = loaded(tmp_path, lambda d: (copy(d), d.update(transform={"sql": "SELECT key, value FROM source"})))
    assert "emit" not in stream_source_options(cfg)
    assert not any(k.startswith("source.") for k in writer_options(cfg, once=False))


def test_a_copy_hands_the_sink_the_source_options(tmp_path):
    cfg = loaded(tmp_path, copy)
    assert passes_through(cfg)
    source = stream_source_options(cfg)
    assert source["emit"] == "offsetRanges"
    sink = writer_options(cfg, once=False)
    assert {k[len("source."):]: v for k, v in sink.items() if k.startswith("source.")} == source
    with_headers = loaded(tmp_path, lambda d: (copy(d), d["source"].update(include_headers=True),
                                               d["sink"].update(headers_column="headers")))
    assert passes_through(with_headers)


def test_a_copys_progress_counts_the_records_the_sink_wrote(tmp_path, monkeypatch):
    cfg = loaded(tmp_path, copy)
    lines: list[str] = []
    reporter = ProgressReporter(cfg, redactor=lambda text: text, emit=lines.append)
    record = SimpleNamespace(metrics={"records": 250, "transactions": 2, "precommit_max_ms": 5, "commit_ms": 3},
                             handles=[])
    monkeypatch.setattr(reporter, "_record", lambda batch_id: record)
    progress = SimpleNamespace(batchId=0, numInputRows=4, batchDuration=10, durationMs={"addBatch": 5},
                               sources=[])
    reporter.report(SimpleNamespace(recentProgress=[progress]))
    assert lines[0].startswith(f"kafka-eos {cfg.name} batch 0: 250 in, 250 out"), lines
