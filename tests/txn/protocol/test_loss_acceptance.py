"""Accepting the loss of a batch's lost partitions after ReplayMismatchError: once, then the replay
commits nothing of the batch (no duplicate), and the query goes on."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.errors import ReplayMismatchError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.kafka_committer import LOST
from kafka_eos.txn.protocol.loss_acceptance import ACCEPTED_RECORDS, NothingToAcceptError, accept_loss
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLog, SinkLogReader
from tests.txn.fakes import append_path, handle, protocol


def _refused_replay(tmp_path):
    """Batch 7 decided over 3 partitions, partition 1 (5 records) lost, its replay refused."""
    with pytest.raises(Exception):
        protocol(tmp_path, {1: LOST}).commit_batch(7, [handle(0), handle(1), handle(2)])
    with pytest.raises(ReplayMismatchError, match=r"kafka-eos accept-loss --batch 7"):
        protocol(tmp_path).commit_batch(7, [TxnHandle.empty(0, True, 5), handle(1, records=9),
                                            TxnHandle.empty(2, True, 1)])


def test_accepted_loss_lets_the_replay_commit_nothing_and_the_next_batch_run(tmp_path):
    _refused_replay(tmp_path)
    record = accept_loss(SinkLog(str(tmp_path), "p"), 7)
    assert record.state == "committed" and record.metrics[ACCEPTED_RECORDS] == 5.0 and record.metrics["records"] == 10.0
    assert SinkLogReader(str(tmp_path)).get(7).partitions_with("lost") == {1}

    replay = protocol(tmp_path)
    plan = replay.recover()
    assert not plan.skip(7, 1)                     # the replay writes partition 1 again ...
    again = replay.commit_batch(7, [TxnHandle.empty(0, True, 5), handle(1, records=9, epoch=1),
                                    TxnHandle.empty(2, True, 1)])
    assert replay.committer.committed == [] and replay.committer.aborted == [1]   # ... and it is aborted
    assert again == record
    nxt = replay.commit_batch(8, [handle(0), handle(1)])
    assert nxt.state == "committed" and replay.committer.committed == [0, 1]


@pytest.mark.parametrize("batch, message", [(6, "not the sink log's last batch"), (7, "already accepted")])
def test_accepting_is_refused_for_another_batch_and_a_second_time(tmp_path, batch, message):
    _refused_replay(tmp_path)
    if batch == 7:
        accept_loss(SinkLog(str(tmp_path), "p"), 7)
    with pytest.raises(NothingToAcceptError, match=message):
        accept_loss(SinkLog(str(tmp_path), "p"), batch)


def test_a_batch_with_pending_or_no_lost_partitions_is_not_accepted(tmp_path):
    recorded = protocol(tmp_path).commit_batch(3, [handle(0)])
    with pytest.raises(NothingToAcceptError, match="committed \\(nothing was lost\\)"):
        accept_loss(SinkLog(str(tmp_path), "p"), recorded.batch_id)
    log = SinkLog(str(tmp_path), "p")
    decided = BatchRecord(4, "decided", 2, (handle(0), handle(1)), {0: "pending", 1: "pending"})
    append_path(log, decided, decided.with_status({1: "lost"}))
    with pytest.raises(NothingToAcceptError, match=r"pending transactions \[0\]: start the query"):
        accept_loss(log, 4)
