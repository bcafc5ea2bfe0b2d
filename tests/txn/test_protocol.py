"""Pure logic of txn/: ids, handles, the sink log, the timeout rule, replay merging."""
from __future__ import annotations

import json

import pytest

from kafka_eos.txn.errors import ReplayMismatchError, SinkConfigError, SinkLogConflictError, SinkLogError
from kafka_eos.txn.faults import FaultPlan
from kafka_eos.txn.handle import TxnHandle
from kafka_eos.txn.kafka_committer import COMMITTED, LOST
from kafka_eos.txn.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.sink_config import SinkConfig
from kafka_eos.txn.sink_log import DECIDED, LOST as LOG_LOST, BatchRecord, SinkLog, SinkLogReader
from kafka_eos.txn.steps import Step, StepHooks
from kafka_eos.txn.timeouts import check_transaction_timeout
from kafka_eos.txn.transactional_ids import TransactionalIdFactory


def handle(k: int, records: int = 5, epoch: int = 0) -> TxnHandle:
    return TxnHandle(sink_partition=k, transactional_id=f"p-{k}-0", producer_id=100 + k,
                     producer_epoch=epoch, records=records)


def test_id_pool_is_bounded_whatever_the_number_of_batches():
    ids = TransactionalIdFactory("orders", slots=2)
    used = {ids.id_for(k, batch) for k in range(4) for batch in range(1000)}
    assert len(used) == 8
    assert ids.id_for(3, 10) != ids.id_for(3, 11)  # consecutive batches never share an id
    assert ids.owns("orders-3-1") and not ids.owns("orders-x-3-1") and not ids.owns("orders2-3-1")


def test_invalid_prefix_is_refused():
    with pytest.raises(SinkConfigError, match="transactional.id.prefix"):
        TransactionalIdFactory("has space")


def test_handle_round_trip_and_version():
    h = handle(2)
    assert TxnHandle.from_dict(h.to_dict()) == h
    with pytest.raises(ValueError, match="format 99"):
        TxnHandle.from_dict({**h.to_dict(), "v": 99})
    assert not TxnHandle.empty(1).has_transaction


def test_sink_log_round_trip_prefix_pin_and_version(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    record = log.append(BatchRecord(4, DECIDED, 2, (handle(0), handle(1)), {0: "pending", 1: "pending"}), None)
    assert log.get(4) == record and log.latest() == record
    with pytest.raises(SinkLogError, match="belongs to transactional.id.prefix 'p'"):
        SinkLog(str(tmp_path), "other")
    data = json.loads((tmp_path / "4.0.json").read_text())
    (tmp_path / "4.0.json").unlink()
    (tmp_path / "4.0.json").write_text(json.dumps({**data, "v": 9}))
    with pytest.raises(SinkLogError, match="format 9"):
        log.get(4)


def test_sink_log_prune_keeps_the_latest(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    for b in range(10):
        log.append(BatchRecord(b, "committed", 0, ()), None)
    log.prune(keep=3)
    assert log.batch_ids() == [7, 8, 9]


def test_durable_partitions_include_empty_and_committed():
    record = BatchRecord(1, DECIDED, 4, (handle(0), TxnHandle.empty(1), handle(2), handle(3)),
                         {0: "committed", 2: LOG_LOST, 3: "pending"})
    assert record.durable_partitions() == {0, 1}


@pytest.mark.parametrize("timeout,trigger,broker,broken", [
    (60_000, 5_000, 900_000, 0),
    (10_000, 5_000, 900_000, 1),       # not above trigger + margin
    (1_000_000, 5_000, 900_000, 1),    # above the broker maximum
    (4_000, 5_000, 3_000, 2),
    (60_000, 5_000, None, 0),          # offline: broker maximum unknown
])
def test_timeout_ordering(timeout, trigger, broker, broken):
    violations = check_transaction_timeout(timeout, trigger, 30_000, broker)
    assert len(violations) == broken
    assert all("transaction.timeout.ms" in str(v) and "Fix:" in str(v) for v in violations)


class FakeCommitter:
    """Stands in for EndTxn: records calls, answers from a table."""

    def __init__(self, answers: dict[int, str] | None = None):
        self.answers, self.committed, self.aborted = answers or {}, [], []

    def commit(self, handles):
        self.committed += [h.sink_partition for h in handles]
        return {h.sink_partition: self.answers.get(h.sink_partition, COMMITTED) for h in handles}

    def abort(self, handles):
        self.aborted += [h.sink_partition for h in handles]
        return {}


class NoAborter:
    def __init__(self):
        self.calls = 0

    def abort_lingering(self, keep=frozenset()):
        self.calls += 1
        return []


def protocol(tmp_path, answers=None, hooks=None, query_id=None) -> TwoPhaseCommitProtocol:
    return TwoPhaseCommitProtocol(SinkLog(str(tmp_path), "p", query_id), FakeCommitter(answers), NoAborter(),
                                  hooks=hooks)


def test_replay_rewrites_only_lost_partitions(tmp_path):
    first = protocol(tmp_path, {1: LOST})
    with pytest.raises(Exception, match=r"sink partitions \[1\]"):
        first.commit_batch(7, [handle(0), handle(1), handle(2)])
    plan = protocol(tmp_path).recover()
    assert plan.skip(7, 0) and plan.skip(7, 2) and not plan.skip(7, 1)
    second = protocol(tmp_path)
    replay = [TxnHandle.empty(0, skipped=True, records=5), handle(1, epoch=1), TxnHandle.empty(2, True, 5)]
    record = second.commit_batch(7, replay)
    assert second.committer.committed == [1] and record.state == "committed"
    assert record.handles[0] == handle(0) and record.handles[1] == handle(1, epoch=1)


def test_replay_with_another_shape_is_refused(tmp_path):
    with pytest.raises(Exception):
        protocol(tmp_path, {1: LOST}).commit_batch(3, [handle(0), handle(1)])
    with pytest.raises(ReplayMismatchError, match=r"it has 3 sink partitions \(decided: 2\)"):
        protocol(tmp_path).commit_batch(3, [handle(0), handle(1), handle(2)])


@pytest.mark.parametrize("replay,named", [
    ([TxnHandle.empty(0, True, 5), handle(1, records=6), TxnHandle.empty(2, True, 4)],   # rows moved
     "sink partition 1: decided 5, replay 6; sink partition 2: decided 5, replay 4"),
    ([TxnHandle.empty(0, True, 5), handle(1), TxnHandle.empty(2, True, 5), handle(3, records=1)],  # shape
     "it has 4 sink partitions (decided: 3) and other record counts (sink partition 3: decided 0, replay 1)"),
])
def test_replay_with_other_rows_per_partition_is_refused_and_commits_nothing(tmp_path, replay, named):
    with pytest.raises(Exception):
        protocol(tmp_path, {1: LOST}).commit_batch(7, [handle(0), handle(1), handle(2)])
    refused = protocol(tmp_path)
    with pytest.raises(ReplayMismatchError, match=r"batch 7 .*\[1\].*non-deterministic") as error:
        refused.commit_batch(7, replay)
    assert named in str(error.value)
    assert refused.committer.committed == [] and sorted(refused.committer.aborted) == sorted(
        h.sink_partition for h in replay if h.has_transaction)
    assert SinkLogReader(str(tmp_path)).get(7).partitions_with(LOG_LOST) == {1}


def test_replay_counts_partitions_that_were_empty_in_the_decision(tmp_path):
    with pytest.raises(Exception):
        protocol(tmp_path, {1: LOST}).commit_batch(2, [TxnHandle.empty(0), handle(1), handle(2)])
    with pytest.raises(ReplayMismatchError, match="sink partition 0: decided 0, replay 3"):
        protocol(tmp_path).commit_batch(2, [TxnHandle.empty(0, True, 3), handle(1, epoch=1), TxnHandle.empty(2, True, 5)])


class TakeOverAt(StepHooks):
    """Step hooks whose ``before_decision`` let another run commit the same batch first."""

    def __init__(self, other):
        self.other = other

    def reached(self, step, batch_id):
        if step is Step.BEFORE_DECISION:
            self.other()


def test_a_run_that_lost_the_race_to_a_decision_stops_without_overwriting(tmp_path):
    other = lambda: protocol(tmp_path).commit_batch(1, [handle(0, epoch=1), handle(1, epoch=1)])
    stalled = protocol(tmp_path, hooks=TakeOverAt(other))
    with pytest.raises(SinkLogConflictError, match="took over"):
        stalled.commit_batch(1, [handle(0), handle(1)])
    assert stalled.committer.committed == []
    record = SinkLogReader(str(tmp_path)).get(1)
    assert record.state == "committed" and record.handles[0].producer_epoch == 1


def test_sink_log_is_pinned_to_the_checkpoint_query_and_refuses_the_old_format(tmp_path):
    SinkLog(str(tmp_path / "a"), "p", "query-1")
    SinkLog(str(tmp_path / "a"), "p", "query-1")
    with pytest.raises(SinkLogError, match="belongs to the query query-1.*sinkLogLocation"):
        SinkLog(str(tmp_path / "a"), "p", "query-2")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "_meta.json").write_text(json.dumps({"v": 1, "prefix": "p"}))
    with pytest.raises(SinkLogError, match="format 1 is not 2"):
        SinkLog(str(tmp_path / "old"), "p", "query-1")


def test_reader_creates_nothing(tmp_path):
    reader = SinkLogReader(str(tmp_path / "none"))
    assert reader.latest_batch_id() is None and reader.get(0) is None and reader.meta() is None
    assert not (tmp_path / "none").exists()


def test_query_start_cleans_up_after_recovery_only(tmp_path):
    SinkLog(str(tmp_path), "p").append(BatchRecord(9, DECIDED, 1, (handle(0),), {0: "pending"}), None)
    proto = protocol(tmp_path)
    proto.recover(query_start=True)
    assert proto.committer.committed == [0] and proto.aborter.calls == 1
    later = protocol(tmp_path)
    later.recover()
    assert later.aborter.calls == 0


def test_replay_of_a_committed_batch_commits_nothing_and_aborts_rewrites(tmp_path):
    protocol(tmp_path).commit_batch(5, [handle(0), handle(1)])
    again = protocol(tmp_path)
    again.commit_batch(5, [handle(0, epoch=1), TxnHandle.empty(1, skipped=True)])
    assert again.committer.committed == [] and again.committer.aborted == [0]


def test_recovery_commits_a_decided_batch_first(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    log.append(BatchRecord(9, DECIDED, 2, (handle(0), handle(1)), {0: "pending", 1: "pending"}), None)
    proto = protocol(tmp_path)
    plan = proto.recover()
    assert proto.committer.committed == [0, 1] and plan.skip(9, 0) and plan.skip(9, 1)
    assert log.get(9).state == "committed"


def test_recovery_records_lost_handles_and_plans_their_rewrite(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    log.append(BatchRecord(4, DECIDED, 3, (handle(0), handle(1), handle(2)), {0: "pending", 1: "pending", 2: "pending"}),
               None)
    proto = protocol(tmp_path, {1: LOST})
    plan = proto.recover()  # must not raise: the replay that follows re-writes partition 1
    assert plan.skip(4, 0) and plan.skip(4, 2) and not plan.skip(4, 1)
    assert log.get(4).status == {0: "committed", 1: "lost", 2: "committed"}
    record = protocol(tmp_path).commit_batch(4, [TxnHandle.empty(0, True, 5), handle(1, epoch=2), TxnHandle.empty(2, True, 5)])
    assert record.state == "committed"


def _hit_at_once(directory: str, barrier) -> None:
    from kafka_eos.txn.faults import FaultPlan
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


# -- commit states, collaborators, fault injection as wrappers ------------------------------------
_FORMAT_2 = """{
 "v": 2,
 "batch": 3,
 "seq": 1,
 "state": "decided",
 "num_partitions": 2,
 "handles": [
  {
   "v": 1,
   "sink_partition": 0,
   "transactional_id": "p-0-0",
   "producer_id": 100,
   "producer_epoch": 0,
   "records": 5,
   "partitions": {},
   "precommit_ms": 0.0,
   "skipped": false
  }
 ],
 "status": {
  "0": "lost",
  "1": "committed"
 },
 "metrics": {}
}"""


def test_a_format_2_record_reads_as_commit_states_and_writes_back_byte_for_byte():
    from kafka_eos.txn.states import CommitState
    record = BatchRecord.from_json(_FORMAT_2, "3.1.json")
    assert record.state is CommitState.DECIDED and record.status == {0: CommitState.LOST, 1: CommitState.COMMITTED}
    assert record.to_json() == _FORMAT_2
    with pytest.raises(SinkLogError, match="'halfway' is not a valid CommitState"):
        BatchRecord.from_json(_FORMAT_2.replace('"decided"', '"halfway"'), "3.1.json")


def test_from_config_builds_the_production_collaborators_and_wraps_them_only_with_a_fault_plan(tmp_path):
    from kafka_eos.txn.fault_injection import FaultInjectingCommitter, FaultInjectingHooks
    from kafka_eos.txn.kafka_committer import KafkaCommitter
    from kafka_eos.txn.transaction_aborter import TransactionAborter
    cfg = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                     log_location=str(tmp_path / "log"), transaction_timeout_ms=12_345)
    plain = TwoPhaseCommitProtocol.from_config(cfg, "query-1")
    assert type(plain.committer) is KafkaCommitter and type(plain.aborter) is TransactionAborter
    assert type(plain.hooks) is StepHooks and plain.transaction_timeout_ms == 12_345
    assert SinkLogReader(str(tmp_path / "log")).meta()["query_id"] == "query-1"
    faulty = TwoPhaseCommitProtocol.from_config(cfg, "query-1", FaultPlan.parse("after_decision@1", str(tmp_path)))
    assert isinstance(faulty.committer, FaultInjectingCommitter) and isinstance(faulty.hooks, FaultInjectingHooks)
    assert type(TwoPhaseCommitProtocol.from_config(cfg, "query-1", FaultPlan()).committer) is KafkaCommitter


def _injected(tmp_path, spec: str, answers=None) -> tuple[TwoPhaseCommitProtocol, FakeCommitter]:
    from kafka_eos.txn.fault_injection import FaultInjectingCommitter, FaultInjectingHooks
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
    from kafka_eos.txn.fault_injection import task_input
    rows = iter([1, 2])
    assert task_input(FaultPlan())(rows, 1) is rows
    (tmp_path / "release").write_text("go")
    paused_input = pickle.loads(pickle.dumps(task_input(FaultPlan.parse("task_start@1,task_write@1", str(tmp_path)))))
    assert list(paused_input(iter([1, 2]), 1)) == [1, 2]
    assert sorted(p.name.split(".")[0] for p in tmp_path.glob("task_*.*")) == ["task_start", "task_write"]


def test_readers_have_no_writing_methods_and_create_nothing(tmp_path):
    from kafka_eos.connectors.sink.query_start import checkpoint_query_id
    reader = SinkLogReader(str(tmp_path / "none"))
    assert not hasattr(reader.store, "create") and not hasattr(reader.store, "delete")
    assert checkpoint_query_id({"checkpointLocation": str(tmp_path / "ck")}) is None
    assert not (tmp_path / "none").exists() and not (tmp_path / "ck").exists()
