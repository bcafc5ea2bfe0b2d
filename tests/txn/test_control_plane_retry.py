"""Retry and classification logic of the control plane (issue 10, point 6), with fake clients:
the sink's EndTxn rounds retry FindCoordinator/connection failures; an expired transactional id
on a decided handle is LOST; lingering-transaction cleanup never raises. (The source lookups'
retries: tests/offsets/test_kafka_offsets.py.)"""
from __future__ import annotations

import logging

import kafka.errors as Errors
import pytest

from kafka_eos.txn.protocol.errors import TwoPhaseCommitError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.kafka_committer import ABORTED, COMMITTED, LOST, KafkaCommitter
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter
from kafka_eos.txn.protocol.transactional_ids import TransactionalIdFactory
from tests.txn.fakes import handle




# ---- sink: EndTxn rounds ----------------------------------------------------------------

class FakeControlPlane:
    """Answers each end_txn_round with the next scripted item: an exception or {tid: code}."""

    def __init__(self, script: list) -> None:
        self.script, self.rounds, self.forgotten = list(script), 0, []

    def end_txn_round(self, requests, commit):
        self.rounds += 1
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(item, BaseException):
            raise item
        return {tid: item.get(tid, 0) for tid, _, _ in requests}

    def forget_coordinators(self, tids):
        self.forgotten.extend(tids)


def committer_with(script: list, timeout_s: float = 10.0) -> tuple[KafkaCommitter, FakeControlPlane]:
    fake = FakeControlPlane(script)
    return KafkaCommitter({"bootstrap.servers": "x:1"}, timeout_s, control_plane=lambda conf: fake), fake


@pytest.mark.parametrize("failure", [
    Errors.CoordinatorNotAvailableError("FindCoordinatorResponse error"),
    Errors.CoordinatorLoadInProgressError("FindCoordinatorResponse error"),
    Errors.NotCoordinatorError("moved"),
    Errors.KafkaConnectionError("connection refused"),
    Errors.BrokerNotAvailableError("down"),
    Errors.KafkaTimeoutError("request timed out"),
    TimeoutError("timed out"),
    ConnectionRefusedError(111, "refused"),
])
def test_a_failing_find_coordinator_or_connection_is_retried_not_fatal(failure):
    committer, fake = committer_with([failure, failure, {}])
    assert committer.commit([handle(0), handle(1)]) == {0: COMMITTED, 1: COMMITTED}
    assert fake.rounds == 3
    assert set(fake.forgotten) >= {"p-0-0", "p-1-0"}  # the next round looks the coordinators up again


def test_retries_stop_at_the_commit_timeout_with_a_named_error():
    committer, fake = committer_with([Errors.CoordinatorNotAvailableError("down")], timeout_s=0.5)
    with pytest.raises(TwoPhaseCommitError, match="did not complete within"):
        committer.commit([handle(0)])
    assert fake.rounds > 1


def test_a_non_retriable_failure_is_named_not_retried():
    committer, fake = committer_with([Errors.TransactionalIdAuthorizationFailedError("acl")])
    with pytest.raises(TwoPhaseCommitError, match="ACL"):
        committer.commit([handle(0)])
    assert fake.rounds == 1


@pytest.mark.parametrize("code", [Errors.InvalidProducerIdMappingError.errno,
                                  Errors.TransactionalIdNotFoundError.errno])
def test_an_expired_transactional_id_on_a_decided_handle_is_lost(code):
    committer, _ = committer_with([{"p-1-0": code}])
    assert committer.commit([handle(0), handle(1)]) == {0: COMMITTED, 1: LOST}


@pytest.mark.parametrize("code", [Errors.InvalidProducerIdMappingError.errno,
                                  Errors.TransactionalIdNotFoundError.errno])
def test_an_expired_transactional_id_has_nothing_to_abort(code):
    committer, _ = committer_with([{"p-0-0": code}])
    assert committer.abort([handle(0)]) == {0: ABORTED}


class ZombieThenCurrent(FakeControlPlane):
    """Round 1: a stale coordinator (resumed after a hang) answers INVALID_PRODUCER_EPOCH and
    describes the id at the previous epoch, CompleteCommit; round 2: the current coordinator commits."""

    def __init__(self) -> None:
        super().__init__([{"p-0-0": Errors.InvalidProducerEpochError.errno}, {}])

    def describe_transactions(self, ids):
        state = type("S", (), {"value": "CompleteCommit"})()
        return {tid: type("D", (), {"producer_id": 100, "producer_epoch": 1, "state": state})() for tid in ids}


def test_a_stale_coordinators_older_epoch_is_asked_again_not_lost():
    # Seen with the coordinator SIGSTOPped 60 s: resumed, it still answered for the id with the
    # epoch before the hang, and the batch was declared LOST (TransactionLostError stopped the query).
    fake = ZombieThenCurrent()
    decided = TxnHandle(sink_partition=0, transactional_id="p-0-0", producer_id=100, producer_epoch=2, records=5)
    assert KafkaCommitter({"bootstrap.servers": "x:1"}, 10.0, lambda conf: fake).commit([decided]) == {0: COMMITTED}
    assert fake.rounds == 2 and "p-0-0" in fake.forgotten


def test_a_newer_epoch_still_means_fenced_and_lost():
    fake = ZombieThenCurrent()
    older = TxnHandle(sink_partition=0, transactional_id="p-0-0", producer_id=100, producer_epoch=0, records=5)
    assert KafkaCommitter({"bootstrap.servers": "x:1"}, 10.0, lambda conf: fake).commit([older]) == {0: LOST}


# ---- sink: lingering-transaction cleanup is best effort ---------------------------------

def test_abort_lingering_never_raises_and_names_what_was_not_cleaned(monkeypatch, caplog):
    def broken(conf):
        raise Errors.KafkaConnectionError("all brokers down")
    aborter = TransactionAborter({"bootstrap.servers": "x:1"}, TransactionalIdFactory("orders", slots=2), 1.0, broken)
    with caplog.at_level(logging.WARNING):
        assert aborter.abort_lingering() == []
    assert "orders" in caplog.text and "KafkaConnectionError" in caplog.text


def test_abort_lingering_survives_a_failing_end_txn(monkeypatch, caplog):
    class Lister:
        def live_brokers(self):
            return [1]

        def list_transactions(self, **kwargs):
            return {1: [type("T", (), {"transactional_id": "orders-0-1"})()]}

        def describe_transactions(self, ids):
            state = type("S", (), {"value": "Ongoing"})()
            return {tid: type("D", (), {"producer_id": 7, "producer_epoch": 0, "state": state})() for tid in ids}
    aborter = TransactionAborter({"bootstrap.servers": "x:1"}, TransactionalIdFactory("orders", slots=2), 0.3,
                                 lambda conf: Lister())
    with caplog.at_level(logging.WARNING):
        assert aborter.abort_lingering() == []
    assert "orders-0-1" in caplog.text


def test_end_txn_windows_keep_each_coordinator_within_its_in_flight_limit():
    from kafka_eos.control_plane_client import _windows
    requests = [(f"t{i}", i, 0) for i in range(12)]
    nodes = {f"t{i}": 1 if i < 9 else 2 for i in range(12)}
    windows = _windows(requests, nodes, in_flight=5)
    assert [len(w) for w in windows] == [8, 4]  # node 1: 5 + 4, node 2: 3 in the first window
    assert sorted(r for w in windows for r in w) == sorted(requests)
    for window in windows:
        for node in (1, 2):
            assert sum(nodes[r[0]] == node for r in window) <= 5


def test_the_sweep_lists_each_broker_and_passes_over_one_that_does_not_answer(caplog):
    """Issue 44: ListTransactions went to every broker in one call; one hung broker failed the whole
    sweep, and the transactions the answering brokers coordinate stayed open."""
    class OneSilent:
        def live_brokers(self):
            return [1, 2, 3]

        def list_transactions(self, broker_ids, **kwargs):
            (broker,) = broker_ids
            if broker == 2:
                raise Errors.KafkaTimeoutError("no answer within 10 s")
            return {broker: [type("T", (), {"transactional_id": f"orders-0-{broker}"})()]}
    aborter = TransactionAborter({"bootstrap.servers": "x:1"}, TransactionalIdFactory("orders", slots=2), 0.3,
                                 lambda conf: OneSilent())
    with caplog.at_level(logging.WARNING):
        assert aborter.ongoing() == ["orders-0-1", "orders-0-3"]
    assert "broker(s) 2 did not answer ListTransactions" in caplog.text
