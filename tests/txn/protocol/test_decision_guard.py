"""DecisionGuard: a task attempt sees only decisions newer than its plan."""
from __future__ import annotations

from kafka_eos.txn.protocol.decision_guard import DecisionGuard
from kafka_eos.txn.log.sink_log import DECIDED, BatchRecord, SinkLog


def _decide(tmp_path, batch_id: int) -> None:
    log = SinkLog(str(tmp_path / "log"), "p")
    log.append(BatchRecord(batch_id, DECIDED, 1, ()), log.get(batch_id))


def test_the_guard_sees_only_decisions_newer_than_the_plan(tmp_path):
    location = str(tmp_path / "log")
    assert not DecisionGuard(location, None)()            # empty log, nothing planned after
    _decide(tmp_path, 0)
    assert DecisionGuard(location, None)()                # batch 0 decided after batch 0 was planned
    assert not DecisionGuard(location, 0)()               # batch 1 planned after batch 0: still open
    _decide(tmp_path, 0)
    assert not DecisionGuard(location, 0)()               # a replay of batch 0 is not newer
    _decide(tmp_path, 2)
    assert DecisionGuard(location, 0)()
