"""The two-phase commit protocol's steps over fakes: replay merging and its checks, the race to a
decision, recovery, the query-start cleanup, the production collaborators."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.errors import ReplayMismatchError, SinkLogConflictError
from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_log import DECIDED, LOST as LOG_LOST, BatchRecord, SinkLog, SinkLogReader
from kafka_eos.txn.protocol.states import EndTxnOutcome
from kafka_eos.txn.protocol.steps import Step, StepHooks
from tests.txn.fakes import handle, protocol

LOST = EndTxnOutcome.LOST


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


def test_recovery_commits_the_decided_batch_and_aborts_nothing(tmp_path):
    # the query start's lingering abort after recovery: tests/connectors/sink/test_query_start.py
    SinkLog(str(tmp_path), "p").append(BatchRecord(9, DECIDED, 1, (handle(0),), {0: "pending"}), None)
    proto = protocol(tmp_path)
    proto.recover()
    assert proto.committer.committed == [0] and proto.aborter.calls == 0
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


def test_from_config_builds_the_production_collaborators_and_wraps_them_only_with_a_fault_plan(tmp_path):
    from kafka_eos.txn.protocol.fault_injection import FaultInjectingCommitter, FaultInjectingHooks
    from kafka_eos.txn.protocol.kafka_committer import KafkaCommitter
    from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter
    cfg = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                     log_location=str(tmp_path / "log"), transaction_timeout_ms=12_345, evidence_retention_ms=3_600_000)
    plain = TwoPhaseCommitProtocol.from_config(cfg, "query-1")
    assert type(plain.committer) is KafkaCommitter and type(plain.aborter) is TransactionAborter
    assert plain.log.segments.retention_ms == 3_600_000
    assert type(plain.hooks) is StepHooks and plain.transaction_timeout_ms == 12_345
    assert SinkLogReader(str(tmp_path / "log")).meta()["query_id"] == "query-1"
    faulty = TwoPhaseCommitProtocol.from_config(cfg, "query-1", FaultPlan.parse("after_decision@1", str(tmp_path)))
    assert isinstance(faulty.committer, FaultInjectingCommitter) and isinstance(faulty.hooks, FaultInjectingHooks)
    assert type(TwoPhaseCommitProtocol.from_config(cfg, "query-1", FaultPlan()).committer) is KafkaCommitter


def test_the_batch_inputs_are_stored_with_the_decision_and_kept_to_the_committed_record(tmp_path):
    offsets = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"t":{"0":7}}'
    seen = []

    class Seeing(StepHooks):
        def reached(self, step, batch_id):
            if step is Step.AFTER_DECISION:
                seen.append(SinkLogReader(str(tmp_path)).get(batch_id))

    record = protocol(tmp_path, hooks=Seeing()).commit_batch(3, [handle(0), handle(1)], inputs=offsets)
    assert seen[0].state == DECIDED and seen[0].inputs == offsets
    assert record.state == "committed" and record.inputs == offsets == SinkLogReader(str(tmp_path)).get(3).inputs
    assert protocol(tmp_path).commit_batch(4, [handle(0)]).inputs is None


def test_a_replay_without_inputs_keeps_the_decided_ones(tmp_path):
    with pytest.raises(Exception, match=r"sink partitions \[1\]"):
        protocol(tmp_path, {1: LOST}).commit_batch(7, [handle(0), handle(1)], inputs="offsets 7")
    replay = [TxnHandle.empty(0, skipped=True, records=5), handle(1, epoch=1)]
    assert protocol(tmp_path).commit_batch(7, replay).inputs == "offsets 7"
