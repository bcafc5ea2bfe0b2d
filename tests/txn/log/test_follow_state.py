"""FollowState records and the lag the probes read from them and the sink log (real files)."""
from __future__ import annotations

from kafka_eos.txn.log.follow_state import FollowState, follow_lag, latest_state, write_state
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLog
from kafka_eos.txn.protocol.states import BatchState, PartitionState


def commit(log: SinkLog, batch_id: int, at_ms: int) -> None:
    handles = (TxnHandle(sink_partition=0),)
    decided = log.append(BatchRecord(batch_id, BatchState.DECIDED, 1, handles, {0: PartitionState.PENDING}), None)
    log.append(BatchRecord(batch_id, BatchState.COMMITTED, 1, handles, {0: PartitionState.COMMITTED},
                           {"committed_at_ms": at_ms}), decided)


def test_no_follower_no_lag(tmp_path):
    assert follow_lag(str(tmp_path)) is None and latest_state(str(tmp_path)) is None


def test_the_state_counts_over_runs_and_the_newest_is_read(tmp_path):
    first = FollowState().counted({"verified": [0, 1], "failed": [2]}, 2, 0, 1000)
    write_state(str(tmp_path), first)
    write_state(str(tmp_path), first.counted({"verified": [3]}, 3, 1, 2000))
    assert latest_state(str(tmp_path)) == FollowState(2000, 3, 1, {"verified": 3, "failed": 1})


def test_lag_counts_committed_batches_after_the_followers_and_the_oldest_age(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    for b in range(5):
        commit(log, b, 10_000 + b * 1000)
    write_state(str(tmp_path), FollowState(11_500, 1, 0, {"verified": 2}))
    lag = follow_lag(str(tmp_path), now_ms=20_000)
    assert (lag.unverified, lag.oldest_unverified_s, lag.aged_out, lag.verified_through) == (3, 8.0, 0, 1)


def test_batches_dropped_after_the_followers_position_count_as_aged_out(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    for b in range(5, 8):
        commit(log, b, 10_000 + b)
    write_state(str(tmp_path), FollowState(1, 1, 2, {}))
    lag = follow_lag(str(tmp_path), now_ms=20_000)
    assert lag.aged_out == 2 + 3 and lag.unverified == 3, "batches 2-4 left the log unjudged"
