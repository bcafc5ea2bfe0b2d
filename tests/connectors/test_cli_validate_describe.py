"""`kafka-eos validate` / `describe`: exit codes, report shape, examples, plan contents."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_eos.connectors.cli import build_parser, main
from tests.factories import valid, write

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "config" / "pipelines").glob("*.yaml"))


def test_parser_keeps_the_existing_commands():
    assert build_parser().parse_args(["dev", "kafka", "status"]).action == "status"
    assert build_parser().parse_args(["validate", "--offline", "a.yaml", "b.yaml"]).pipelines == ["a.yaml", "b.yaml"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid_offline(example, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KAFKA_EOS_CHECKPOINTS", str(tmp_path))
    assert main(["validate", "--offline", str(example)]) == 0
    assert "OK" in capsys.readouterr().out


def test_examples_cover_json_avro_dlq_and_registry():
    text = {p.name: p.read_text() for p in EXAMPLES}
    assert any("format: json" in t and "on_decode_error: dlq" in t and "sql:" in t for t in text.values())
    assert any("format: avro" in t and ".avsc" in t for t in text.values())
    assert any("registry:" in t for t in text.values())


def test_invalid_file_exits_1_with_path_message_and_fix(tmp_path, capsys):
    data = valid(tmp_path)
    data["sink"]["kafka"]["properties"] = {"acks": "1"}
    data["sink"]["topik"] = "x"
    assert main(["validate", "--offline", str(write(tmp_path, "p.yaml", data))]) == 1
    err = capsys.readouterr().err
    assert "2 problem(s)" in err and 'sink.kafka.properties["acks"]' in err and "did you mean 'topic'?" in err
    assert "fix: remove it or set acks: all" in err


def test_files_validated_together_must_not_share_a_prefix(tmp_path, capsys):
    first = write(tmp_path, "a.yaml", valid(tmp_path))
    other = valid(tmp_path)
    other["checkpoint"]["location"] = str(tmp_path / "ckpt-b")
    second = write(tmp_path, "b.yaml", other)
    assert main(["validate", "--offline", str(first), str(second)]) == 1
    assert "'t-eos' is also used by" in capsys.readouterr().err


def test_missing_file_is_invalid(tmp_path, capsys):
    assert main(["validate", "--offline", str(tmp_path / "nope.yaml")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_describe_prints_the_resolved_plan(tmp_path, capsys):
    path = write(tmp_path, "p.yaml", valid(tmp_path))
    assert main(["describe", "--offline", "--json", str(path)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["source"]["topics"] == ["in"] and plan["source"]["starting_offsets"] == "earliest"
    assert plan["sink"]["transactional_ids"] == "t-eos-<sink partition>-<0..7>"
    assert plan["transform"]["sql"].startswith("SELECT key, value FROM source")
    assert plan["spark"]["sink_options"]["transactional.id.prefix"] == "t-eos"
    assert plan["checkpoint_state"] is None and plan["source"]["align"] is None


def test_describe_reads_where_a_checkpoint_resumes(tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    for batch, offset in ((0, 10), (1, 25)):
        (ckpt / "offsets" / str(batch)).write_text(
            'v1\n{"batchWatermarkMs":0}\n' + json.dumps({"v": 1, "topics": {"in": {"0": offset}}}))
    (ckpt / "commits" / "0").write_text("v1\n{}")
    assert main(["describe", "--offline", "--json", str(write(tmp_path, "p.yaml", valid(tmp_path)))]) == 0
    state = json.loads(capsys.readouterr().out)["checkpoint_state"]
    assert state == {"last_planned_batch": 1, "last_committed_batch": 0, "resume_from": [{"in": {"0": 10}}]}


def test_describe_names_a_listed_broker_that_does_not_answer(tmp_path, capsys, monkeypatch):
    """Issue 44: with one broker of several silent, describe still prints the plan and names it."""
    from kafka_eos import broker_reach
    from kafka_eos.connectors.pipeline import describe
    monkeypatch.setattr(describe, "live_offsets", lambda cfg, timeout_s: {"in-0": {"latest": 3}})
    monkeypatch.setattr(broker_reach, "probe", lambda conf, timeout_s: {"b1:9092": None, "b2:9092": "refused the connection"})
    path = write(tmp_path, "p.yaml", valid(tmp_path))
    assert main(["describe", "--json", str(path)]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["warnings"] == ["source.kafka: broker b2:9092 refused the connection; the answers here come from the "
                                "other brokers"]
    assert plan["live_offsets"] == {"in-0": {"latest": 3}}
