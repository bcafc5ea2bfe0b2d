"""Savepoints (issue 65) on the real broker and Spark, in the session's SparkSession: a 1-minute
tumbling windowed count per page (watermark 30 s, a late topic, a DLQ) over skewed pages.

The old pipeline runs over the first minutes of input, so that windows are open at its end; a
savepoint is taken while it runs (it stops after its running batch); a start on the old
checkpoint is refused (exit 5, naming the savepoint) and writes nothing; more input arrives (late
records of closed windows among it); the pipeline with a changed SQL (an added output column)
starts a new checkpoint from the savepoint. Every window the final watermark closed equals a
batch count over the whole input without the late records; each is emitted once
(read_committed), by exactly one of the two queries (the old one emitted the windows with end <=
W, the new one the others, with all their records); each late record is in the late topic once,
each undecodable one in the DLQ once (the replay reads them again).
A restore the savepoint cannot carry (state without a watermark) is refused with its reason,
writing nothing (sliding windows longer than their slide are carried: test_savepoint_sliding).
"""
from __future__ import annotations

import json
import time
from collections import Counter

import pyspark
import pytest

from integration_tests.kafka_tools import check_exactly_once, create_topic, read_all, unique
from integration_tests.savepoint_cells import (CHANGED, MINUTE, SQL, T0, expected, late_ids, pipeline, run_and_save,
                                               seed, send, windows, written)
from kafka_eos.connectors.pipeline import restore, savepoint
from kafka_eos.connectors.pipeline.runner import PipelineFailed, run_query
from kafka_eos.offsets.rewind import SavepointRefused, StateNotRebuildable
from kafka_eos.txn.log.savepoints import read_restore


@pytest.mark.slow  # about 2 minutes: two pipelines, the first stopped by the savepoint, the second replaying
@pytest.mark.long  # make long (CI, after make test); make test keeps the refused restores
def test_a_savepoint_restored_with_a_changed_sql_emits_every_window_once(bootstrap, spark, tmp_path):
    saved = run_and_save(spark, bootstrap, tmp_path)
    topics, sent, poison, old, done, save_s = (saved.topics, saved.sent, saved.poison, saved.old, saved.done,
                                               saved.save_s)
    sp, emitted_by_old, open_at_savepoint = done.savepoint, saved.emitted_by_old, saved.open_at_savepoint

    location = tmp_path / "cp"
    before = written(location, bootstrap, topics)
    with pytest.raises(PipelineFailed) as refused:
        run_query(spark, old, once=True, emit=lambda _: None)
    assert refused.value.exit_code == 5 and done.location in str(refused.value), str(refused.value)
    assert "--from-savepoint" in str(refused.value)

    late_new = [(10_000_000 + k, "home", T0 + 10_000 + k) for k in range(3)]  # windows closed at the savepoint
    more = seed(bootstrap, topics["in"], len(sent), T0 + 3 * MINUTE + 20_000, T0 + 5 * MINUTE)
    send(bootstrap, topics["in"], late_new)
    sent += more + late_new
    assert written(location, bootstrap, topics) == before, "the refused start wrote something"

    new = pipeline(tmp_path, topics, "cp2", CHANGED)
    began = time.monotonic()
    start = restore.prepare(new, done.location)
    assert start.w0_ms is not None and start.w0_ms <= sp.watermark_ms < start.w0_ms + MINUTE
    result = run_query(spark, new, once=True, emit=lambda _: None)
    restore_s = time.monotonic() - began
    assert result.batches >= 2 and read_restore(str(tmp_path / "cp2")) == start

    dlq = Counter(m.value() for m in read_all(bootstrap, topics["dlq"], "read_committed", idle_s=2.0, timeout_s=120))
    assert dlq == Counter(poison), f"every undecodable record in the DLQ once, the replay's not again: {dlq}"
    late = late_ids(bootstrap, topics["late"])
    assert all(n == 1 for n in late.values()), f"late records twice: {[i for i, n in late.items() if n > 1]}"
    assert {i for i, _, _ in late_new} <= set(late), "late records of closed windows reach the late topic"
    want = expected(sent, late)
    report = check_exactly_once(bootstrap, topics["out"], expected=want,
                                id_of=lambda m: tuple(json.loads(m.value())[k] for k in ("page", "start_ms", "views")))
    assert report.ok, report.line()
    by_new = Counter(windows(bootstrap, topics["out"])) - Counter(emitted_by_old)
    assert all(start_ms + MINUTE > sp.watermark_ms for _, start_ms, _ in by_new), "the new query emitted a closed window"
    assert {(page, start_ms) for page, start_ms, _ in by_new} >= open_at_savepoint, "a window open at the savepoint"
    print(f"savepoint: {len(want)} windows over {len(sent)} records ({len(late)} late), {len(emitted_by_old)} "
          f"emitted by the old query, {sum(by_new.values())} by the new ({len(open_at_savepoint)} open at the "
          f"savepoint); savepoint {save_s:.1f} s, restore {restore_s:.1f} s, "
          f"replay from batch {start.rewind_batch} of {sp.last_batch}")


@pytest.mark.parametrize("change", ["no_watermark"])
def test_a_restore_the_savepoint_cannot_carry_is_refused_and_writes_nothing(bootstrap, spark, tmp_path, monkeypatch,
                                                                            change):
    monkeypatch.setattr(savepoint, "QUIET_S", 1.0)
    topics = {"bootstrap": bootstrap, "in": unique("views"), "out": unique("views-out"), "late": unique("views-late")}
    for name in ("in", "out", "late"):
        create_topic(bootstrap, topics[name])
    seed(bootstrap, topics["in"], 0, T0, T0 + MINUTE + 40_000)
    old = pipeline(tmp_path, topics, "cp", SQL.format(size="1 minute", slide=""), prefix=unique("old"))
    run_query(spark, old, once=True, emit=lambda _: None)
    done = savepoint.take(old, None, pyspark.__version__, lambda _: None)
    new = pipeline(tmp_path, topics, "cp2", SQL.format(size="1 minute", slide=""), watermark=False)
    with pytest.raises(SavepointRefused) as refused:
        restore.prepare(new, done.location)
    text = str(refused.value)
    assert isinstance(refused.value, StateNotRebuildable) and "never closes" in text, text
    assert not (tmp_path / "cp2").exists(), "the refused restore wrote something"
