"""Batch states, partition states and EndTxn outcomes, and the transitions the sink log allows."""
from __future__ import annotations

import json

import pytest

from kafka_eos.txn.protocol.errors import TwoPhaseCommitError
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLog, SinkLogReader
from kafka_eos.txn.protocol.states import (BatchState, EndTxnOutcome, PartitionState, StateTransitionError,
                                  check_batch_transition, check_partition_transitions)
from tests.txn.fakes import append_path, handle

B, P = BatchState, PartitionState


def decided(status: dict, batch_id: int = 4) -> BatchRecord:
    return BatchRecord(batch_id, B.DECIDED, 3, (handle(0), handle(1), handle(2)), status)


def test_the_three_vocabularies_are_distinct_types_with_the_log_strings_as_values():
    assert {s.value for s in B} == {"decided", "committed"}
    assert {s.value for s in P} == {"pending", "committed", "lost"}
    assert {s.value for s in EndTxnOutcome} == {"committed", "lost", "aborted"}
    assert B.COMMITTED is not P.COMMITTED and f"{P.LOST}" == str(P.LOST) == "lost"
    assert EndTxnOutcome.COMMITTED.partition_state() is P.COMMITTED
    assert EndTxnOutcome.LOST.partition_state() is P.LOST
    with pytest.raises(ValueError, match="aborted"):
        EndTxnOutcome.ABORTED.partition_state()


@pytest.mark.parametrize("before,after", [(None, B.DECIDED), (B.DECIDED, B.DECIDED), (B.DECIDED, B.COMMITTED),
                                          (B.COMMITTED, B.COMMITTED)])
def test_allowed_batch_transitions(before, after):
    check_batch_transition(3, before, after)


@pytest.mark.parametrize("before,after", [(None, B.COMMITTED), (B.COMMITTED, B.DECIDED)])
def test_refused_batch_transitions_name_the_batch_and_both_states(before, after):
    with pytest.raises(StateTransitionError) as error:
        check_batch_transition(3, before, after)
    assert isinstance(error.value, TwoPhaseCommitError)
    assert f"batch 3: the sink log cannot go from {before or '(none)'} to {after}" in str(error.value)


@pytest.mark.parametrize("before,after", [
    (None, P.PENDING), (P.PENDING, P.COMMITTED), (P.PENDING, P.LOST), (P.LOST, P.PENDING), (P.PENDING, P.PENDING),
    (P.LOST, P.LOST), (P.COMMITTED, P.COMMITTED), (P.LOST, None), (P.PENDING, None)])
def test_allowed_partition_transitions(before, after):
    check_partition_transitions(3, {} if before is None else {1: before}, {} if after is None else {1: after})


@pytest.mark.parametrize("before,after", [
    (None, P.COMMITTED), (None, P.LOST), (P.COMMITTED, P.PENDING), (P.COMMITTED, P.LOST), (P.COMMITTED, None),
    (P.LOST, P.COMMITTED)])
def test_refused_partition_transitions_name_the_batch_partition_and_both_states(before, after):
    with pytest.raises(StateTransitionError,
                       match=f"batch 3, sink partition 1: the sink log cannot go from {before or '[(]none[)]'} "
                             f"to {after or '[(]none[)]'}"):
        check_partition_transitions(3, {0: P.PENDING} if before is None else {0: P.PENDING, 1: before},
                                    {0: P.COMMITTED} if after is None else {0: P.COMMITTED, 1: after})


def test_a_batch_is_not_committed_with_pending_partitions():
    check_batch_transition(3, B.DECIDED, B.COMMITTED, {0: P.COMMITTED, 1: P.LOST})   # a loss accepted
    with pytest.raises(StateTransitionError, match=r"batch 3: .* decided to committed while sink partitions \[1\]"):
        check_batch_transition(3, B.DECIDED, B.COMMITTED, {0: P.COMMITTED, 1: P.PENDING})
    with pytest.raises(StateTransitionError, match="pending"):
        decided({0: P.PENDING, 1: P.PENDING}).with_status({0: P.COMMITTED}, B.COMMITTED)


def test_with_status_checks_the_transition():
    record = decided({0: P.PENDING, 1: P.PENDING})
    assert record.with_status({0: P.COMMITTED, 1: P.LOST}).status == {0: P.COMMITTED, 1: P.LOST}
    committed = record.with_status({0: P.COMMITTED, 1: P.COMMITTED}, B.COMMITTED)
    assert committed.state is B.COMMITTED
    with pytest.raises(StateTransitionError, match="sink partition 0: the sink log cannot go from committed to lost"):
        committed.with_status({0: P.LOST})
    with pytest.raises(StateTransitionError, match="batch 4: the sink log cannot go from committed to decided"):
        committed.with_status({}, B.DECIDED)


def test_append_refuses_a_disallowed_transition_and_writes_nothing(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    with pytest.raises(StateTransitionError, match="batch 4: the sink log cannot go from [(]none[)] to committed"):
        log.append(BatchRecord(4, B.COMMITTED, 3, (), {}), None)
    first = log.append(decided({0: P.PENDING, 1: P.PENDING}), None)
    lost = log.append(first.with_status({0: P.COMMITTED, 1: P.LOST}), first)
    with pytest.raises(StateTransitionError, match="sink partition 0: the sink log cannot go from committed to pending"):
        log.append(decided({0: P.PENDING, 1: P.PENDING}), lost)
    rewritten = log.append(decided({0: P.COMMITTED, 1: P.PENDING}), lost)      # the replay re-writes 1
    done = log.append(BatchRecord(4, B.COMMITTED, 3, rewritten.handles, {0: P.COMMITTED, 1: P.COMMITTED}), rewritten)
    with pytest.raises(StateTransitionError, match="batch 4: the sink log cannot go from committed to decided"):
        log.append(decided({0: P.COMMITTED, 1: P.COMMITTED}), done)
    assert sorted(p.name for p in tmp_path.glob("4.*.json")) == ["4.0.json", "4.1.json", "4.2.json", "4.3.json"]
    assert log.get(4) == done


def test_a_sink_log_as_written_today_is_read_and_continued(tmp_path):
    """Records of sink log format 2 as today's build writes them (plain JSON strings) stay readable,
    and the next state follows them under the transition rules."""
    (tmp_path / "_meta.json").write_text(json.dumps({"v": 2, "prefix": "p", "query_id": "q"}))
    handles = [handle(0).to_dict(), handle(1).to_dict()]
    (tmp_path / "8.0.json").write_text(json.dumps({"v": 2, "batch": 8, "seq": 0, "state": "decided", "num_partitions": 2,
                                                   "handles": handles, "status": {"0": "pending", "1": "pending"},
                                                   "metrics": {}}, indent=1))
    (tmp_path / "8.1.json").write_text(json.dumps({"v": 2, "batch": 8, "seq": 1, "state": "decided", "num_partitions": 2,
                                                   "handles": handles, "status": {"0": "committed", "1": "lost"},
                                                   "metrics": {}}, indent=1))
    last = SinkLogReader(str(tmp_path)).latest()
    assert (last.batch_id, last.seq, last.state, last.status) == (8, 1, B.DECIDED, {0: P.COMMITTED, 1: P.LOST})
    log = SinkLog(str(tmp_path), "p", "q")
    nxt = append_path(log, last.with_status({1: P.PENDING}), BatchRecord(8, B.COMMITTED, 2, last.handles,
                                                                         {0: P.COMMITTED, 1: P.COMMITTED}))
    assert nxt.seq == 3 and json.loads((tmp_path / "8.3.json").read_text())["status"] == {"0": "committed",
                                                                                          "1": "committed"}
