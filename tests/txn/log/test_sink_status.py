"""The sink log's last decision, classified; open transactions with their age (pure parts)."""
from __future__ import annotations

from types import SimpleNamespace

from kafka.structs import TopicPartition

from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLog
from kafka_eos.txn.log.sink_status import (DecisionState, OpenTransaction, classify, last_decision, open_from,
                                       still_open)
from kafka_eos.txn.protocol.states import BatchState, PartitionState
from tests.txn import fakes

DECIDED, COMMITTED, PENDING, LOST = (BatchState.DECIDED, BatchState.COMMITTED, PartitionState.PENDING,
                                     PartitionState.LOST)


def handle(k: int, records: int = 5) -> TxnHandle:
    return fakes.handle(k, records, epoch=3, slot=1)


def record(state, status, handles=None) -> BatchRecord:
    handles = handles or (handle(0), handle(1, 7), TxnHandle.empty(2))
    return BatchRecord(4, state, len(handles), tuple(handles), status)


def test_an_empty_log_has_no_decision(tmp_path):
    assert classify(None).state is DecisionState.NONE
    assert last_decision(str(tmp_path / "nowhere")).state is DecisionState.NONE
    assert not (tmp_path / "nowhere").exists()


def test_committed_batch():
    decision = classify(record(COMMITTED, {0: COMMITTED, 1: COMMITTED}))
    assert (decision.state, decision.batch_id, decision.records, decision.committed) == \
        (DecisionState.COMMITTED, 4, 12, (0, 1))
    assert decision.pending == () and decision.lost == ()


def test_decided_with_pending_transactions():
    decision = classify(record(DECIDED, {0: COMMITTED, 1: PENDING}))
    assert decision.state is DecisionState.DECIDED_PENDING
    assert [(p.sink_partition, p.transactional_id, p.producer_id, p.producer_epoch, p.records)
            for p in decision.pending] == [(1, "p-1-1", 101, 3, 7)]


def test_lost_partitions_await_rewrite():
    decision = classify(record(DECIDED, {0: COMMITTED, 1: LOST}))
    assert (decision.state, decision.lost, decision.lost_records) == (DecisionState.LOST, (1,), 7)


def test_last_decision_reads_the_newest_state_of_the_newest_batch(tmp_path):
    log = SinkLog(str(tmp_path / "log"), "p")
    first = log.append(record(DECIDED, {0: PENDING, 1: PENDING}), None)
    log.append(record(COMMITTED, {0: COMMITTED, 1: COMMITTED}), first)
    assert last_decision(str(tmp_path / "log")).state is DecisionState.COMMITTED


def described(state="Ongoing", start=1_000, pid=101, epoch=3, timeout=60_000):
    return SimpleNamespace(state=SimpleNamespace(value=state), producer_id=pid, producer_epoch=epoch,
                           transaction_timeout_ms=timeout, transaction_start_time_ms=start,
                           topic_partitions={TopicPartition("out", 1), TopicPartition("out", 0)})


def test_open_transactions_are_the_ongoing_ones_oldest_first_with_age_and_time_left():
    rows = open_from({"p-1-1": described(start=9_000), "p-0-1": described(start=1_000, pid=100),
                      "p-2-1": described(state="CompleteCommit")}, now_ms=11_000)
    assert [(t.transactional_id, t.age_ms, t.remaining_ms, t.partitions) for t in rows] == \
        [("p-0-1", 10_000, 50_000, ("out-0", "out-1")), ("p-1-1", 2_000, 58_000, ("out-0", "out-1"))]
    assert OpenTransaction("x", "Ongoing", 1, 1, age_ms=70_000, timeout_ms=60_000).remaining_ms == 0


def test_pending_transactions_are_matched_by_id_producer_and_epoch():
    decision = classify(record(DECIDED, {0: PENDING, 1: PENDING}))
    open_now = open_from({"p-0-1": described(pid=100), "p-1-1": described(pid=101, epoch=4)}, now_ms=2_000)
    matched, gone = still_open(decision, open_now)
    assert [t.transactional_id for t in matched] == ["p-0-1"]
    assert [p.transactional_id for p in gone] == ["p-1-1"]  # epoch 4: the broker ended epoch 3's


def test_a_broker_that_does_not_answer_fails_the_listing_instead_of_shortening_it(monkeypatch):
    """status and the operator metrics read the open transactions; with a broker silent, a short list
    would read as "nothing held back" (the sweep, which retries later, only warns)."""
    import pytest
    from kafka.errors import KafkaTimeoutError

    from kafka_eos.txn.log import sink_status
    from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter
    from kafka_eos.txn.protocol.transactional_ids import TransactionalIdFactory

    class OneSilent:
        def live_brokers(self):
            return [1, 2]

        def list_transactions(self, broker_ids, **kwargs):
            if broker_ids == [2]:
                raise KafkaTimeoutError("no answer within 10 s")
            return {1: [SimpleNamespace(transactional_id="orders-0-1")]}

        def describe_transactions(self, ids):
            return {tid: described() for tid in ids}

    monkeypatch.setattr(sink_status, "control_plane", lambda conf: OneSilent())
    monkeypatch.setattr(sink_status, "TransactionAborter",
                        lambda conf, ids: TransactionAborter(conf, ids, 0.3, lambda c: OneSilent()))
    with pytest.raises(sink_status.ListingIncomplete, match="broker.s. 2 did not answer ListTransactions"):
        sink_status.open_transactions({"bootstrap.servers": "x:1"}, TransactionalIdFactory("orders", slots=2))
