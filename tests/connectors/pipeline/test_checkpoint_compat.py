"""Which pipeline changes keep a checkpoint: the pure rules (``compare``), then the report of
``kafka-eos validate --against-checkpoint`` on checkpoints in a directory."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_eos.connectors.cli import main
from kafka_eos.connectors.pipeline.checkpoint_compat import Checkpoint, against_checkpoints, compare
from kafka_eos.connectors.pipeline.pipeline_shape import PipelineShape, record_shape, shape_of
from tests.connectors.pipeline.test_runner_submit_demo import write_offsets
from tests.factories import loaded, valid, write

AGGREGATION = ("SELECT CAST(value.id AS STRING) AS key, count(*) AS value FROM source "
               "GROUP BY window(ts, '1 minute'), value.id")
WATERMARK = {"column": "ts", "expression": "timestamp", "delay": "1 minute"}


def base(tmp_path: Path) -> dict:
    data = valid(tmp_path)
    data["errors"] = {"on_decode_error": "skip"}
    return data


def config(tmp_path: Path, change=lambda data: None):
    def based(data: dict) -> None:
        data["errors"] = {"on_decode_error": "skip"}
        change(data)
    return loaded(tmp_path, based)


def stateful(data: dict) -> None:
    data["transform"] = {"sql": AGGREGATION, "watermark": WATERMARK}


def verdicts(tmp_path, before=lambda d: None, after=lambda d: None, pending=None, recorded=True):
    old, new = config(tmp_path, before), config(tmp_path, after)
    shape = shape_of(old) if recorded else PipelineShape(shape_of(old).scans, shape_of(old).stateful, recorded=False)
    found = Checkpoint(old.checkpoint.location, shape, pending, old.sink.transactional_id_prefix)
    return compare(found, new)


def only(found, keeps: bool, *words: str):
    assert len(found) == 1, [v.line() for v in found]
    assert found[0].keeps is keeps and all(w in found[0].line() for w in words), found[0].line()


def test_no_change_and_no_checkpoint_have_nothing_to_say(tmp_path):
    assert verdicts(tmp_path) == []
    cfg = config(tmp_path)
    assert compare(Checkpoint(cfg.checkpoint.location, None), config(tmp_path, stateful)) == []


@pytest.mark.parametrize("change,words", [
    (lambda d: d["transform"].update(sql="SELECT key, value FROM source WHERE value.amount > 10"),
     ("transform.sql/steps/watermark changed (stateless transform)",)),
    (lambda d: d["source"].update(schema={"inline": {"type": "record", "name": "O", "fields": [
        {"name": "id", "type": "long"}, {"name": "amount", "type": "double"},
        {"name": "note", "type": ["null", "string"]}]}}),
     ("source format/schema changed",)),
    (lambda d: d["sink"].update(format="bytes", transaction_timeout_ms=600000), ("sink settings changed",)),
    (lambda d: d["source"].update(topics=["in", "in2"]), ("source topics", "earliest offset")),
    (lambda d: d["source"].update(options={"minPartitions": "8"}), ("minPartitions changed (None -> 8)",)),
    (lambda d: d["source"].update(options={"maxTasksPerBatch": "2"}), ("maxTasksPerBatch changed (None -> 2)",)),
])
def test_stateless_sink_and_input_changes_keep_the_checkpoint(tmp_path, change, words):
    only(verdicts(tmp_path, after=change), True, "keeps the checkpoint", *words)


def test_late_topic_added_needs_a_new_checkpoint(tmp_path):
    def late(d: dict) -> None:
        stateful(d)
        d["transform"]["watermark"] = {**WATERMARK, "late_topic": "in-late"}
    found = verdicts(tmp_path, before=stateful, after=late)
    scans = [v for v in found if "time(s)" in v.line()]
    assert len(scans) == 1 and not scans[0].keeps, [v.line() for v in found]
    assert "reads each batch's offsets 2 time(s)" in scans[0].line() and "read them 1 time(s)" in scans[0].line()
    assert "restore the DLQ and late_topic settings" in scans[0].line()


def test_dlq_added_or_removed_needs_a_new_checkpoint(tmp_path):
    dlq = lambda d: d.update(errors={"on_decode_error": "dlq", "dlq_topic": "in-dlq"})  # noqa: E731
    only(verdicts(tmp_path, after=dlq), False, "errors.on_decode_error: dlq cannot resume", "1 source scan(s)",
         "fix: keep on_decode_error fail or skip for this checkpoint, or start with a new checkpoint.location")
    only(verdicts(tmp_path, before=dlq), False, "written with on_decode_error dlq", "needs a new checkpoint")
    other_topic = lambda d: d.update(errors={"on_decode_error": "dlq", "dlq_topic": "in-dlq2"})  # noqa: E731
    only(verdicts(tmp_path, before=dlq, after=other_topic), True, "errors.dlq_topic changed (in-dlq -> in-dlq2)")


def test_adding_removing_or_changing_state_needs_a_new_checkpoint(tmp_path):
    only(verdicts(tmp_path, after=stateful), False, "stateful operation", "added", "fix: start with a new checkpoint")
    only(verdicts(tmp_path, before=stateful), False, "stateful operation", "removed")
    other_window = lambda d: (stateful(d),  # noqa: E731
                              d["transform"].update(sql=AGGREGATION.replace("1 minute", "5 minutes")))
    only(verdicts(tmp_path, before=stateful, after=other_window), False,
         "transform.sql/steps/watermark of a stateful transform changed")
    assert verdicts(tmp_path, before=stateful, after=stateful) == []
    sink_only = lambda d: (stateful(d), d["sink"].update(topic="out2"))  # noqa: E731
    only(verdicts(tmp_path, before=stateful, after=sink_only), True, "sink settings changed")


def test_another_transactional_id_prefix_needs_a_new_checkpoint(tmp_path):
    only(verdicts(tmp_path, after=lambda d: d["sink"].update(transactional_id_prefix="t2-eos")), False,
         "sink.transactional_id_prefix changed (t-eos -> t2-eos", "keep transactional_id_prefix t-eos")


def test_while_a_batch_is_pending_a_change_of_the_rows_per_sink_partition_must_wait(tmp_path):
    more = lambda d: d["source"].update(options={"minPartitions": "8"})  # noqa: E731
    only(verdicts(tmp_path, after=more, pending=7), False, "minPartitions", "batch 7 is decided but not committed",
         "fix: finish the pending batch first", "until batch 7 commits")
    sql = lambda d: d["transform"].update(sql="SELECT key, value FROM source")  # noqa: E731
    only(verdicts(tmp_path, after=sql, pending=7), False, "finish the pending batch first")
    only(verdicts(tmp_path, after=lambda d: d["sink"].update(topic="out2"), pending=7), True, "sink settings")
    only(verdicts(tmp_path, after=lambda d: d["source"].update(topics=["in", "in2"]), pending=7), True, "topics")


def test_a_checkpoint_without_a_record_is_compared_on_scans_and_state(tmp_path):
    sql = lambda d: d["transform"].update(sql="SELECT key, value FROM source")  # noqa: E731
    assert verdicts(tmp_path, after=sql, recorded=False) == []
    only(verdicts(tmp_path, after=stateful, recorded=False), False, "stateful operation", "added")
    only(verdicts(tmp_path, before=stateful, after=stateful, recorded=False), True, "not compared")
    only(verdicts(tmp_path, after=sql, pending=3, recorded=False), False, "not comparable", "batch 3")


# ---- the report, on checkpoints in a directory ----

def started(tmp_path: Path, change=lambda d: None) -> Path:
    """A checkpoint of the base pipeline (one batch planned, its shape recorded) and the file of
    the pipeline changed by ``change``."""
    cfg = config(tmp_path)
    write_offsets(Path(cfg.checkpoint.location), 0, 1)
    record_shape(cfg)
    data = base(tmp_path)
    change(data)
    return write(tmp_path, "p.yaml", data)


def test_validate_against_checkpoint_exit_codes(tmp_path, capsys):
    path = started(tmp_path, lambda d: d["transform"].update(sql="SELECT key, value FROM source"))
    assert main(["validate", "--offline", "--against-checkpoint", str(path)]) == 0
    assert "stateless transform): keeps the checkpoint" in capsys.readouterr().out
    path = started(tmp_path, lambda d: d.update(errors={"on_decode_error": "dlq", "dlq_topic": "in-dlq"}))
    assert main(["validate", "--offline", "--against-checkpoint", str(path)]) == 1
    err = capsys.readouterr().err
    assert "1 change(s) need a new checkpoint" in err and "fix: keep on_decode_error fail or skip" in err


def test_an_unreadable_checkpoint_exits_2(tmp_path, capsys):
    path = started(tmp_path)
    record = Path(config(tmp_path).checkpoint.location) / "kafka-eos-pipeline" / "1.json"
    record.write_text(json.dumps({"v": 99}))
    assert main(["validate", "--offline", "--against-checkpoint", str(path)]) == 2
    assert "unreadable" in capsys.readouterr().err


def test_a_new_checkpoint_accepts_anything_and_secrets_stay_out_of_the_report(tmp_path):
    cfg = config(tmp_path, lambda d: d["sink"]["kafka"].update(properties={"sasl.password": "pw-123456"}))
    code, text = against_checkpoints([cfg])
    assert code == 0 and "no batch yet" in text
    object.__setattr__(cfg.checkpoint, "location", cfg.checkpoint.location + "/pw-123456")
    assert "pw-123456" not in against_checkpoints([cfg])[1]
