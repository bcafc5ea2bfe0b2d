"""verify --recompute beyond Spark's offset log: which batches a replay reaches, and the recorded
view it reads (real files in tmp_path: a checkpoint and a sink log whose records keep ``inputs``)."""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from kafka_eos.connectors.operate.recorded_view import build, plan
from kafka_eos.txn.log import sink_log_segments
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog
from tests.txn.fakes import append_path, handle


def entry(batch: int, watermark: int = 0) -> str:
    """An offset-log file as Spark writes it (metadata line, one source line)."""
    metadata = json.dumps({"batchWatermarkMs": watermark, "batchTimestampMs": batch}, separators=(",", ":"))
    return f'v1\n{metadata}\n{json.dumps({"v": 1, "topics": {"in": {"0": 10 * batch}}})}'


@pytest.fixture
def checkpoint(tmp_path, monkeypatch):
    """A checkpoint whose offset and commit logs hold batches 5-8 (Spark removed 0-4); ``record``
    commits batches to its sink log with their ``inputs``, rolling older ones into segments of 2."""
    monkeypatch.setattr(sink_log_segments, "SEGMENT_BATCHES", 2)
    root = tmp_path / "checkpoint"
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text('{"id":"q-1"}')
    for b in range(5, 9):
        (root / "offsets" / str(b)).write_text(entry(b, 1000 * b))
        (root / "commits" / str(b)).write_text(f'v1\n{{"nextBatchWatermarkMs":{1000 * (b + 1)}}}')
    log = SinkLog(str(root / "kafka-eos-sink"), "p")

    def record(inputs: dict[int, str | None]) -> None:
        now = time.time() * 1000
        for b, text in sorted(inputs.items()):
            append_path(log, BatchRecord(b, DECIDED, 1, (handle(0),), {0: "pending"}, inputs=text),
                        BatchRecord(b, COMMITTED, 1, (handle(0),), {0: "committed"}, {"committed_at_ms": now},
                                    inputs=text))
        log.prune(keep=2, now_ms=now)
    return SimpleNamespace(path=str(root), root=root, log=str(root / "kafka-eos-sink"), record=record)


def test_a_stateless_plan_reaches_the_batches_the_sink_log_recorded_the_input_of(checkpoint, tmp_path):
    checkpoint.record({b: entry(b, 1000 * b) for b in range(0, 5)})
    assert (checkpoint.root / "kafka-eos-sink" / sink_log_segments.SEGMENTS_DIR).is_dir(), "batches 0-1 rolled"
    found = plan(checkpoint.path, checkpoint.log, [2, 3, 4, 5, 6, 7])
    assert (found.first, found.through, found.missing) == (2, 7, {})
    assert found.needs_view and sorted(found.from_sink_log) == [1, 2, 3, 4]

    view = tmp_path / "view"
    build(checkpoint.path, found, str(view))
    assert (view / "metadata").read_text() == '{"id":"q-1"}'
    assert sorted(int(p.name) for p in (view / "offsets").iterdir()) == list(range(1, 8))
    assert (view / "offsets" / "3").read_text() == entry(3, 3000)            # the sink log's text
    assert (view / "offsets" / "6").read_text() == entry(6, 6000)            # Spark's own file
    # Spark's commit of batch 1 is gone: written as Spark does, with the watermark batch 2 was planned with
    assert (view / "commits" / "1").read_text() == 'v1\n{"nextBatchWatermarkMs":2000}'
    assert [p.name for p in (view / "commits").iterdir()] == ["1"]
    assert not (checkpoint.root / "offsets" / "3").exists(), "the checkpoint is never written"


def test_from_batch_0_the_view_has_no_commit_and_the_watermark_defaults_to_0(checkpoint, tmp_path):
    checkpoint.record({b: entry(b) for b in range(0, 5)})
    found = plan(checkpoint.path, checkpoint.log, list(range(0, 8)))
    assert (found.first, found.through, found.missing) == (0, 7, {})
    build(checkpoint.path, found, str(tmp_path / "view"))
    assert not (tmp_path / "view" / "commits").exists()
    assert sorted(int(p.name) for p in (tmp_path / "view" / "offsets").iterdir()) == list(range(0, 8))

    found = plan(checkpoint.path, checkpoint.log, [1, 2])
    build(checkpoint.path, found, str(tmp_path / "view1"))
    assert (tmp_path / "view1" / "commits" / "0").read_text() == 'v1\n{"nextBatchWatermarkMs":0}'


def test_while_spark_holds_every_batch_the_replay_reads_the_checkpoint_itself(checkpoint):
    found = plan(checkpoint.path, checkpoint.log, [6, 7, 8])
    assert (found.first, found.through, found.missing, found.needs_view) == (6, 8, {}, False)
    found = plan(checkpoint.path, checkpoint.log, [5, 6])  # batch 4 is needed (the state before 5) and gone
    assert (found.first, found.through) == (6, 6) and "no longer holds batch 4" in found.missing[5]


def test_records_written_before_inputs_were_kept_keep_the_reason_spark_gives(checkpoint):
    checkpoint.record({0: None, 1: None, 2: None, 3: entry(3), 4: entry(4)})
    found = plan(checkpoint.path, checkpoint.log, list(range(0, 8)))
    assert (found.first, found.through) == (4, 7) and sorted(found.from_sink_log) == [3, 4]
    assert set(found.missing) == {0, 1, 2, 3}
    assert "no longer holds batch 2 (it keeps spark.sql.streaming.minBatchesToRetain" in found.missing[3]
    assert "no longer holds batch 0" in found.missing[0] and "verify a newer range" in found.missing[0]



def test_an_inputs_text_that_is_not_an_offset_log_entry_is_not_taken(checkpoint):
    checkpoint.record({3: entry(3), 4: "not an offset-log entry"})
    torn = plan(checkpoint.path, checkpoint.log, [4, 5])
    assert torn.first is None and "no longer holds batch 4" in torn.missing[5]


def test_a_gap_in_the_recorded_inputs_starts_the_replay_after_it(checkpoint):
    checkpoint.record({0: entry(0), 1: entry(1), 3: entry(3), 4: entry(4)})  # 2: beyond the sink log
    found = plan(checkpoint.path, checkpoint.log, list(range(0, 8)))
    assert (found.first, found.through) == (4, 7) and sorted(found.from_sink_log) == [3, 4]
    assert all("no longer holds batch 2" in found.missing[b] for b in (0, 1, 2, 3)), found.missing
    assert plan(checkpoint.path, checkpoint.log, [0, 1]).first == 0  # a range before the gap is reached


def test_a_plan_with_state_reaches_back_by_rebuilding_the_state_spark_no_longer_keeps(checkpoint, tmp_path):
    (checkpoint.root / "state" / "0" / "0").mkdir(parents=True)
    (checkpoint.root / "state" / "0" / "0" / "8.delta").write_text("")
    checkpoint.record({b: entry(b) for b in range(0, 5)})
    found = plan(checkpoint.path, checkpoint.log, list(range(2, 8)))
    assert (found.first, found.through, found.missing, found.needs_view, found.deep) == (2, 7, {}, True, True)
    assert sorted(found.from_sink_log) == [1, 2, 3, 4]
    # from batch 0 the state before it is empty: the view alone, no rebuild
    found = plan(checkpoint.path, checkpoint.log, list(range(0, 8)))
    assert (found.first, found.through, found.deep, found.needs_view) == (0, 7, False, True)
    # while Spark keeps batch A-1 (and the state after it), its own state is copied as before
    found = plan(checkpoint.path, checkpoint.log, [6, 7])
    assert (found.first, found.deep, found.needs_view) == (6, False, False)
    found = plan(checkpoint.path, checkpoint.log, [5, 6])  # batch 4 from the sink log, the state rebuilt
    assert (found.first, found.deep, sorted(found.from_sink_log)) == (5, True, [4])


def test_a_stateless_plan_is_never_deep(checkpoint):
    checkpoint.record({b: entry(b) for b in range(0, 5)})
    assert not plan(checkpoint.path, checkpoint.log, [3, 4, 5]).deep


def test_no_batch_reachable_names_each(checkpoint):
    found = plan(checkpoint.path, checkpoint.log, [1, 2])
    assert found.first is None and not found.needs_view
    assert [json.dumps(found.missing[b]).count("no longer holds batch") for b in (1, 2)] == [1, 1]


def test_no_batch_asked_plans_nothing(checkpoint):
    assert plan(checkpoint.path, checkpoint.log, []).first is None
