"""Fault injection wraps the protocol's collaborators and the tasks' input; a point fires once."""
from __future__ import annotations

from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_log import DECIDED, BatchRecord, SinkLog
from tests.txn.fakes import FakeCommitter, NoAborter, handle


def _hit_at_once(directory: str, barrier) -> None:
    from kafka_eos.txn.protocol.faults import FaultPlan
    barrier.wait()
    FaultPlan.parse("task_write@1", directory).hit("task_write", 1)


def test_a_fault_point_fires_in_exactly_one_of_many_tasks_reaching_it_at_once(tmp_path):
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    (tmp_path / "release").write_text("go")          # nobody blocks: count who fired
    barrier = ctx.Barrier(6)
    procs = [ctx.Process(target=_hit_at_once, args=(str(tmp_path), barrier)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert len(list(tmp_path.glob("task_write.*"))) == 1


def _injected(tmp_path, spec: str, answers=None) -> tuple[TwoPhaseCommitProtocol, FakeCommitter]:
    from kafka_eos.txn.protocol.fault_injection import FaultInjectingCommitter, FaultInjectingHooks
    faults = tmp_path / "faults"
    faults.mkdir()
    (faults / "release").write_text("go")  # every point fires (marker written) and returns at once
    hooks = FaultInjectingHooks(FaultPlan.parse(spec, str(faults)))
    inner = FakeCommitter(answers)
    return TwoPhaseCommitProtocol(SinkLog(str(tmp_path / "log"), "p"), FaultInjectingCommitter(inner, hooks),
                                  NoAborter(), hooks=hooks), inner


def test_the_protocol_fault_points_fire_at_their_steps(tmp_path):
    proto, inner = _injected(tmp_path, "before_decision@1,after_decision@1,after_end_txns@1,between_end_txns@1")
    proto.commit_batch(0, [handle(0), handle(1)])
    assert not list((tmp_path / "faults").glob("*.*"))                      # batch 0: not aimed at
    assert inner.committed == [0, 1]
    proto.commit_batch(1, [handle(0), handle(1), handle(2)])
    fired = sorted(p.name.split(".")[0] for p in (tmp_path / "faults").glob("*.*"))
    assert fired == ["after_decision", "after_end_txns", "before_decision", "between_end_txns"]
    assert inner.committed == [0, 1, 0, 0, 1, 2]                             # the first alone, then all


def test_between_end_txns_fires_in_a_recovery_too(tmp_path):
    proto, inner = _injected(tmp_path, "between_end_txns")
    proto.log.append(BatchRecord(6, DECIDED, 2, (handle(0), handle(1)), {0: "pending", 1: "pending"}), None)
    proto.recover()
    assert inner.committed == [0, 0, 1] and list((tmp_path / "faults").glob("between_end_txns.*"))


def test_task_input_is_unchanged_without_a_plan_and_pauses_at_the_task_points_with_one(tmp_path):
    import pickle
    from kafka_eos.txn.protocol.fault_injection import task_input
    rows = iter([1, 2])
    assert task_input(FaultPlan())(rows, 1) is rows
    (tmp_path / "release").write_text("go")
    paused_input = pickle.loads(pickle.dumps(task_input(FaultPlan.parse("task_start@1,task_write@1", str(tmp_path)))))
    assert list(paused_input(iter([1, 2]), 1)) == [1, 2]
    assert sorted(p.name.split(".")[0] for p in tmp_path.glob("task_*.*")) == ["task_start", "task_write"]
