"""Savepoints without Spark: the window kinds read from the file, the savepoint read from a stopped
checkpoint (end offsets, W, the batch table, the rewind), the mark that refuses the old checkpoint's
starts, the restore's refusals, and validate --against-savepoint's verdicts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.pipeline import savepoint
from kafka_eos.connectors.pipeline.held_states import check_held
from kafka_eos.connectors.pipeline.restore import first_config, plan_start
from kafka_eos.connectors.pipeline.savepoint import SavepointTaken, check_no_savepoint, take
from kafka_eos.connectors.pipeline.savepoint_check import against
from kafka_eos.connectors.pipeline.savepoint_plan import gather, window_of
from kafka_eos.connectors.pipeline.stop_request import request_stands
from kafka_eos.offsets import model
from kafka_eos.offsets.rewind import NOTHING_BEFORE, EventTimesMissing, SavepointRefused, StateNotRebuildable, WindowSpec
from kafka_eos.txn.log.event_times import BatchTimes, record_batch
from kafka_eos.txn.log.savepoints import SavepointConflict, write_restore
from tests.factories import loaded

MINUTE = 60_000
WATERMARK = {"column": "event_time", "expression": "timestamp_millis(value.id)", "delay": "30 seconds"}


def sql(window: str = "window(event_time, '1 minute')") -> str:
    return f"SELECT CAST(COUNT(*) AS STRING) AS key, CAST(COUNT(*) AS STRING) AS value FROM source GROUP BY {window}"


def config(tmp_path: Path, window: str = "window(event_time, '1 minute')", watermark: bool = True,
           checkpoint: str = "ckpt", prefix: str | None = "t-eos"):
    def change(data: dict) -> None:
        data["transform"] = {"sql": sql(window), **({"watermark": WATERMARK} if watermark else {})}
        data["errors"] = {"on_decode_error": "fail"}
        data["checkpoint"]["location"] = str(tmp_path / checkpoint)
        if prefix:
            data["sink"]["transactional_id_prefix"] = prefix
        else:
            data["sink"].pop("transactional_id_prefix")
    return loaded(tmp_path, change)


def write_batch(ck: Path, batch: int, end: int, watermark_ms: int, committed: bool = True) -> None:
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "commits").mkdir(parents=True, exist_ok=True)
    stored = model.encode({("in", 0): end}, start={("in", 0): 0} if batch == 0 else None)
    (ck / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":{watermark_ms},"batchTimestampMs":1,'
                                             f'"conf":{{"spark.sql.shuffle.partitions":"4"}}}}\n{json.dumps(stored)}')
    if committed:
        (ck / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def stopped_pipeline(tmp_path: Path):
    """Batches 0-3 of 10 records each, event times rising a minute every batch; records of 1-3."""
    cfg = config(tmp_path)
    ck = tmp_path / "ckpt"
    for batch, wm in enumerate([0, 60_000, 2 * MINUTE, 3 * MINUTE + 30_000]):
        write_batch(ck, batch, 10 * (batch + 1), wm)
        if batch:
            record_batch(str(ck / "kafka-eos-sink"), BatchTimes(batch, batch * MINUTE, batch * MINUTE + 59_000, wm))
    return cfg


@pytest.mark.parametrize("window, kind", [
    ("window(event_time, '1 minute')", WindowSpec.tumbling(MINUTE)),
    ("window(event_time, '1 minute', '1 minute', '10 seconds')", WindowSpec.tumbling(MINUTE, 10_000)),
    ("window(event_time, '2 minutes', '1 minute')", WindowSpec.sliding(2 * MINUTE, MINUTE)),
    ("session_window(event_time, '5 minutes')", WindowSpec("session")),
    ("event_time", WindowSpec("dedup")),
])
def test_the_state_kind_is_read_from_the_file(tmp_path, window, kind):
    assert window_of(config(tmp_path, window)) == kind


def test_no_watermark_and_stateless_plans(tmp_path):
    assert window_of(config(tmp_path, watermark=False)).kind == "no_watermark"
    assert window_of(loaded(tmp_path)).kind == "stateless"


def test_a_stopped_checkpoint_s_savepoint_holds_its_end_watermark_table_and_rewind(tmp_path):
    sp = gather(stopped_pipeline(tmp_path), "4.3.0")
    assert sp.last_batch == 3 and sp.end == {("in", 0): 40} and sp.watermark_ms == 3 * MINUTE + 30_000
    assert [b.batch for b in sp.batches] == [0, 1, 2, 3] and sp.batches[0].start == {("in", 0): 0}
    assert sp.batches[2].start == {("in", 0): 20} and not sp.batches[0].recorded and sp.batches[3].max_ms == 239_000
    assert sp.prefix_bound_ms == NOTHING_BEFORE and sp.state["shuffle_partitions"] == "4"
    # W = 3:30, so the window from 3:00 is open: the first batch that may hold t >= 3:00 is 0 (unknown times)
    assert sp.rewind == {"batch": 0, "w0_ms": 3 * MINUTE, "offsets": {"in-0": 0}}


def test_the_table_reaches_past_the_offset_log_through_the_records_starts(tmp_path):
    cfg = stopped_pipeline(tmp_path)
    log = tmp_path / "ckpt" / "kafka-eos-sink"
    for batch in (0, 1):  # Spark pruned its offset log (minBatchesToRetain)
        (tmp_path / "ckpt" / "offsets" / str(batch)).unlink()
    with pytest.raises(EventTimesMissing, match="before batch 3"):  # batch 2's start was offsets/1's end
        gather(cfg, "4.3.0")
    for f in (log / "_event-times").iterdir():
        f.unlink()
    for batch, wm in [(1, 60_000), (2, 2 * MINUTE)]:  # records that keep their starts
        record_batch(str(log), BatchTimes(batch, batch * MINUTE, batch * MINUTE + 59_000, wm,
                                          start={"in": {"0": 10 * batch}}))
    sp = gather(cfg, "4.3.0")
    assert [b.batch for b in sp.batches] == [1, 2, 3] and sp.batches[0].start == {("in", 0): 10}
    assert sp.prefix_bound_ms == 60_000 + 30_000  # batch 1's recorded watermark + the delay
    assert sp.rewind == {"batch": 3, "w0_ms": 3 * MINUTE, "offsets": {"in-0": 30}}  # 1, 2 end before 3:00


def test_a_planned_uncommitted_batch_or_none_committed_is_refused(tmp_path):
    cfg = stopped_pipeline(tmp_path)
    write_batch(tmp_path / "ckpt", 4, 50, 4 * MINUTE, committed=False)
    with pytest.raises(SavepointRefused, match="batch 4 is planned and not committed"):
        gather(cfg, "4.3.0")
    with pytest.raises(SavepointRefused, match="no batch committed"):
        gather(config(tmp_path, checkpoint="empty"), "4.3.0")


def test_take_marks_the_old_checkpoint_and_a_start_is_refused_naming_the_savepoint(tmp_path, monkeypatch):
    monkeypatch.setattr(savepoint, "QUIET_S", 0.0)
    cfg = stopped_pipeline(tmp_path)
    check_no_savepoint(cfg)
    lines: list[str] = []
    done = take(cfg, None, "4.3.0", lines.append)
    assert done.written and "no run was running" in lines[-1] and request_stands(str(tmp_path / "ckpt"))
    assert (tmp_path / "ckpt" / "kafka-eos-stop").exists()  # stays: a frozen driver that wakes plans nothing
    with pytest.raises(SavepointTaken, match=f"--from-savepoint {done.location}"):
        check_no_savepoint(cfg)
    with pytest.raises(SavepointTaken):  # before Spark, and before the stop request the savepoint left
        check_held(cfg)
    again = take(cfg, None, "4.3.0", lines.append)  # the same savepoint, kept
    assert not again.written and again.savepoint == done.savepoint
    with pytest.raises(SavepointConflict, match="has one savepoint"):
        take(cfg, str(tmp_path / "elsewhere"), "4.3.0", lines.append)


def test_a_window_a_savepoint_cannot_carry_is_refused_before_anything_is_stopped(tmp_path):
    cfg = config(tmp_path, "session_window(event_time, '5 minutes')")
    with pytest.raises(StateNotRebuildable, match="session"):
        take(cfg, None, "4.3.0", print)
    assert not (tmp_path / "ckpt").exists()


def test_the_restore_plans_with_the_new_window_and_refuses_what_it_cannot_carry(tmp_path, monkeypatch):
    monkeypatch.setattr(savepoint, "QUIET_S", 0.0)
    sp = take(stopped_pipeline(tmp_path), None, "4.3.0", print).savepoint
    new = config(tmp_path, checkpoint="ckpt2", prefix=None)
    start = plan_start(new, sp)
    assert start.w0_ms == 3 * MINUTE and start.rewind == {("in", 0): 0} and start.end == {("in", 0): 40}
    write_restore(str(tmp_path / "ckpt2"), start)
    write_batch(tmp_path / "ckpt2", 0, 40, 0)  # started from it: validate later says the same, no refusal
    assert plan_start(new, sp) == start
    first = first_config(new, start)
    assert first.source.max_offsets_per_trigger is None and json.loads(first.source.starting_offsets) == {"in": {"0": 0}}
    assert ("availableNowTarget", '{"in": {"0": 40}}') in first.source.options
    sliding = config(tmp_path, "window(event_time, '2 minutes', '1 minute')", checkpoint="c3", prefix=None)
    seeded = plan_start(sliding, sp)  # carried with a first watermark (watermark_seed), W0 of the new window
    assert seeded.w0_ms == 2 * MINUTE and seeded.watermark_ms == sp.watermark_ms and seeded.rewind == {("in", 0): 0}
    monkeypatch.setattr(spark_compat, "watermark_seed_refusal", lambda: "batch 0's late rows are judged with 0")
    with pytest.raises(SavepointRefused, match="sliding windows longer than their slide on this pyspark: batch 0's"):
        plan_start(sliding, sp)
    plan_start(new, sp)  # tumbling: no seed, no refusal
    refusals = {"never closes": config(tmp_path, watermark=False, checkpoint="c4", prefix=None),
                "is the saved checkpoint": config(tmp_path, prefix=None),
                "is the saved pipeline's": config(tmp_path, checkpoint="c5")}
    for text, cfg in refusals.items():
        with pytest.raises(SavepointRefused, match=text):
            plan_start(cfg, sp)


def test_validate_against_the_savepoint_says_change_by_change(tmp_path, monkeypatch):
    monkeypatch.setattr(savepoint, "QUIET_S", 0.0)
    done = take(stopped_pipeline(tmp_path), None, "4.3.0", print)
    code, text = against(config(tmp_path, "window(event_time, '2 minutes')", checkpoint="ckpt2", prefix=None),
                         done.location, offline=True)
    assert code == 0, text
    assert "carries over: window: tumbling 60000 ms -> tumbling 120000 ms (windows open from 180000 ms -> from " \
           "120000 ms: records between them are in a window the old query emitted and in an open new one)" in text
    assert "check: event-time coverage" in text and "carries over: rewind: replay from batch 0" in text
    code, text = against(config(tmp_path, watermark=False, checkpoint="ckpt2", prefix=None), done.location, offline=True)
    assert code == 1 and "refused: a savepoint cannot carry this pipeline's state (no_watermark)" in text, text
    code, text = against(config(tmp_path, checkpoint="ckpt2", prefix=None), str(tmp_path / "nowhere"), offline=True)
    assert code == 1 and "no savepoint record there" in text


def test_the_command_lines(tmp_path, monkeypatch, capsys):
    from kafka_eos.connectors import cli
    from tests.factories import valid, write
    monkeypatch.setattr(savepoint, "QUIET_S", 0.0)
    data = valid(tmp_path)
    data["transform"] = {"sql": sql(), "watermark": WATERMARK}
    data["errors"] = {"on_decode_error": "fail"}
    old = write(tmp_path, "old.yaml", data)
    stopped_pipeline(tmp_path)
    assert cli.main(["savepoint", str(old)]) == 0
    out = capsys.readouterr().out
    assert "savepoint written: " in out and "--from-savepoint" in out, out
    location = str(tmp_path / "ckpt" / "kafka-eos-sink" / "_savepoint")
    data["checkpoint"]["location"] = str(tmp_path / "ckpt2")
    data["sink"].pop("transactional_id_prefix")
    new = write(tmp_path, "new.yaml", data)
    assert cli.main(["validate", "--offline", str(new), "--against-savepoint", location]) == 0
    assert "carries over: window: tumbling 60000 ms, unchanged" in capsys.readouterr().out
    data["transform"]["sql"] = sql("window(event_time, '2 minutes', '1 minute')")
    assert cli.main(["validate", "--offline", str(write(tmp_path, "new.yaml", data)), "--against-savepoint",
                     location]) == 0
    assert "carries over: window: tumbling 60000 ms -> sliding 120000 ms every 60000 ms" in capsys.readouterr().out
