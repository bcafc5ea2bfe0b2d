"""Which YAML pipelines may carry value references (emit=valueRefs) and what their options are; the
plan's own decision is integration_tests/pipeline/test_value_refs_pipeline.py (it needs Spark's analyzer)."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.pipeline import builder
from tests.factories import loaded


def routed(data: dict) -> None:
    data["source"].pop("schema")
    data["source"]["format"] = "bytes"
    data["sink"]["format"] = "bytes"
    data["transform"] = {"sql": "SELECT key, value FROM source WHERE partition > 0"}
    data["errors"] = {"on_decode_error": "fail"}


def test_bytes_in_and_out_with_a_transform_may_carry_references(tmp_path):
    cfg = loaded(tmp_path, routed)
    assert builder.may_carry_value_refs(cfg) is builder.VALUE_REFS_BY_DEFAULT  # off: measured no gain at 1 KB
    chosen = builder.stream_source_options(cfg, value_refs=True)
    assert chosen["emit"] == "valueRefs"
    sink = builder.writer_options(cfg, once=False, value_refs=True)
    assert sink["source.emit"] == "valueRefs" and sink["source.kafka.bootstrap.servers"]
    assert not any(k.startswith("source.") for k in builder.writer_options(cfg, once=False))


@pytest.mark.parametrize("change", [
    lambda d: d["source"].update(format="json", schema={"inline": '{"type": "record", "name": "r", "fields": []}'}),
    lambda d: d["sink"].update(format="string"),
    lambda d: d.update(errors={"on_decode_error": "dlq", "dlq_topic": "in-dlq"}),   # a second scan
    lambda d: d["source"].update(options={"emit": "records"}),                       # the user's own choice
], ids=["json", "string-sink", "dlq", "emit-records"])
def test_decode_encode_a_second_scan_or_the_users_emit_keep_the_values(tmp_path, change):
    def both(data: dict) -> None:
        routed(data)
        change(data)
    assert not builder.may_carry_value_refs(loaded(tmp_path, both))


def test_emit_value_refs_in_source_options_is_asked_and_never_reaches_a_frame_of_values(tmp_path):
    def asked(data: dict) -> None:
        routed(data)
        data["source"]["options"] = {"EMIT": "valuerefs"}
    cfg = loaded(tmp_path, asked)
    assert builder.may_carry_value_refs(cfg)
    assert not any(v.lower() == "valuerefs" for v in builder.stream_source_options(cfg).values()), \
        "a frame of values (the refused plan, a replay) never gets references"
    assert builder.stream_source_options(cfg, {"replayOffsetLog": "{}"}, value_refs=True).get("emit") is None
