"""A savepoint and its restore where no batch's start is known (Spark's offset log pruned, event-time
records without start offsets, as pyspark 4.0/4.1 runs kept them before their progress's offsets
were read): refused with the way on, never a plan that replays nothing."""
from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_eos.connectors.pipeline import savepoint
from kafka_eos.connectors.pipeline.restore import plan_start
from kafka_eos.connectors.pipeline.savepoint import take
from kafka_eos.offsets.rewind import EventTimesMissing
from kafka_eos.txn.log.savepoints import taken
from tests.connectors.pipeline.test_savepoint_plan import MINUTE, config, stopped_pipeline


def startless(tmp_path):
    """Batches 0-3 committed, Spark's offset log holding batch 3 only; records of 1-3 without starts."""
    cfg = stopped_pipeline(tmp_path)
    for batch in (0, 1, 2):
        (tmp_path / "ckpt" / "offsets" / str(batch)).unlink()
    return cfg


def test_a_savepoint_with_no_batch_s_start_known_is_refused_and_the_checkpoint_stays(tmp_path, monkeypatch):
    """Before: the savepoint was written with rewind batch None (the end as the rewind), so the
    restore emitted the window open at 3:30 without the records read before the savepoint."""
    monkeypatch.setattr(savepoint, "QUIET_S", 0.0)
    cfg = startless(tmp_path)
    with pytest.raises(EventTimesMissing, match="no batch's start offsets are known") as refused:
        take(cfg, None, "4.1.4", print)
    assert f"from {3 * MINUTE} ms on" in str(refused.value) and "Take the savepoint while" in str(refused.value)
    assert taken(str(tmp_path / "ckpt" / "kafka-eos-sink")) is None  # not marked: the old checkpoint may start


def test_a_restore_of_a_savepoint_whose_table_is_empty_is_refused(tmp_path, monkeypatch):
    """A savepoint written before this refusal (its batch table empty) is refused at the restore."""
    monkeypatch.setattr(savepoint, "QUIET_S", 0.0)
    sp = take(stopped_pipeline(tmp_path), None, "4.3.0", print).savepoint
    assert plan_start(config(tmp_path, checkpoint="ckpt2", prefix=None), sp).rewind == {("in", 0): 0}
    old = replace(sp, batches=(), rewind={"batch": None, "w0_ms": 3 * MINUTE, "offsets": {"in-0": 40}})
    with pytest.raises(EventTimesMissing, match="no batch's start offsets are known"):
        plan_start(config(tmp_path, checkpoint="ckpt3", prefix=None), old)
