"""Retry and classification logic of the control plane (issue 10, point 6), with fake clients:
source lookups retry transient errors within one deadline; the sink's EndTxn rounds retry
FindCoordinator/connection failures; an expired transactional id on a decided handle is LOST;
lingering-transaction cleanup never raises."""
from __future__ import annotations

import logging
from concurrent.futures import Future

import kafka.errors as Errors
import pytest
from confluent_kafka import KafkaError, KafkaException

import kafka_eos.offsets.kafka_offsets as kafka_offsets
import kafka_eos.txn.kafka_committer as kafka_committer
import kafka_eos.txn.transaction_aborter as transaction_aborter
from kafka_eos.offsets.kafka_offsets import KafkaLookupError, KafkaOffsets
from kafka_eos.txn.errors import TwoPhaseCommitError
from kafka_eos.txn.handle import TxnHandle
from kafka_eos.txn.kafka_committer import ABORTED, COMMITTED, LOST, KafkaCommitter
from kafka_eos.txn.transaction_aborter import TransactionAborter
from kafka_eos.txn.transactional_ids import TransactionalIdFactory
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


def committer_with(monkeypatch, script: list, timeout_s: float = 10.0) -> tuple[KafkaCommitter, FakeControlPlane]:
    fake = FakeControlPlane(script)
    monkeypatch.setattr(kafka_committer, "control_plane", lambda conf: fake)
    return KafkaCommitter({"bootstrap.servers": "x:1"}, timeout_s), fake


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
def test_a_failing_find_coordinator_or_connection_is_retried_not_fatal(monkeypatch, failure):
    committer, fake = committer_with(monkeypatch, [failure, failure, {}])
    assert committer.commit([handle(0), handle(1)]) == {0: COMMITTED, 1: COMMITTED}
    assert fake.rounds == 3
    assert set(fake.forgotten) >= {"p-0-0", "p-1-0"}  # the next round looks the coordinators up again


def test_retries_stop_at_the_commit_timeout_with_a_named_error(monkeypatch):
    committer, fake = committer_with(monkeypatch, [Errors.CoordinatorNotAvailableError("down")], timeout_s=0.5)
    with pytest.raises(TwoPhaseCommitError, match="did not complete within"):
        committer.commit([handle(0)])
    assert fake.rounds > 1


def test_a_non_retriable_failure_is_named_not_retried(monkeypatch):
    committer, fake = committer_with(monkeypatch, [Errors.TransactionalIdAuthorizationFailedError("acl")])
    with pytest.raises(TwoPhaseCommitError, match="ACL"):
        committer.commit([handle(0)])
    assert fake.rounds == 1


@pytest.mark.parametrize("code", [Errors.InvalidProducerIdMappingError.errno,
                                  Errors.TransactionalIdNotFoundError.errno])
def test_an_expired_transactional_id_on_a_decided_handle_is_lost(monkeypatch, code):
    committer, _ = committer_with(monkeypatch, [{"p-1-0": code}])
    assert committer.commit([handle(0), handle(1)]) == {0: COMMITTED, 1: LOST}


@pytest.mark.parametrize("code", [Errors.InvalidProducerIdMappingError.errno,
                                  Errors.TransactionalIdNotFoundError.errno])
def test_an_expired_transactional_id_has_nothing_to_abort(monkeypatch, code):
    committer, _ = committer_with(monkeypatch, [{"p-0-0": code}])
    assert committer.abort([handle(0)]) == {0: ABORTED}


class ZombieThenCurrent(FakeControlPlane):
    """Round 1: a stale coordinator (resumed after a hang) answers INVALID_PRODUCER_EPOCH and
    describes the id at the previous epoch, CompleteCommit; round 2: the current coordinator commits."""

    def __init__(self) -> None:
        super().__init__([{"p-0-0": Errors.InvalidProducerEpochError.errno}, {}])

    def describe_transactions(self, ids):
        state = type("S", (), {"value": "CompleteCommit"})()
        return {tid: type("D", (), {"producer_id": 100, "producer_epoch": 1, "state": state})() for tid in ids}


def test_a_stale_coordinators_older_epoch_is_asked_again_not_lost(monkeypatch):
    # Seen with the coordinator SIGSTOPped 60 s: resumed, it still answered for the id with the
    # epoch before the hang, and the batch was declared LOST (TransactionLostError stopped the query).
    fake = ZombieThenCurrent()
    monkeypatch.setattr(kafka_committer, "control_plane", lambda conf: fake)
    decided = TxnHandle(sink_partition=0, transactional_id="p-0-0", producer_id=100, producer_epoch=2, records=5)
    assert KafkaCommitter({"bootstrap.servers": "x:1"}, 10.0).commit([decided]) == {0: COMMITTED}
    assert fake.rounds == 2 and "p-0-0" in fake.forgotten


def test_a_newer_epoch_still_means_fenced_and_lost(monkeypatch):
    fake = ZombieThenCurrent()
    monkeypatch.setattr(kafka_committer, "control_plane", lambda conf: fake)
    older = TxnHandle(sink_partition=0, transactional_id="p-0-0", producer_id=100, producer_epoch=0, records=5)
    assert KafkaCommitter({"bootstrap.servers": "x:1"}, 10.0).commit([older]) == {0: LOST}


# ---- sink: lingering-transaction cleanup is best effort ---------------------------------

def test_abort_lingering_never_raises_and_names_what_was_not_cleaned(monkeypatch, caplog):
    def broken(conf):
        raise Errors.KafkaConnectionError("all brokers down")
    monkeypatch.setattr(transaction_aborter, "control_plane", broken)
    aborter = TransactionAborter({"bootstrap.servers": "x:1"}, TransactionalIdFactory("orders", slots=2), 1.0)
    with caplog.at_level(logging.WARNING):
        assert aborter.abort_lingering() == []
    assert "orders" in caplog.text and "KafkaConnectionError" in caplog.text


def test_abort_lingering_survives_a_failing_end_txn(monkeypatch, caplog):
    class Lister:
        def list_transactions(self, **kwargs):
            return {1: [type("T", (), {"transactional_id": "orders-0-1"})()]}

        def describe_transactions(self, ids):
            state = type("S", (), {"value": "Ongoing"})()
            return {tid: type("D", (), {"producer_id": 7, "producer_epoch": 0, "state": state})() for tid in ids}
    monkeypatch.setattr(transaction_aborter, "control_plane", lambda conf: Lister())
    monkeypatch.setattr(kafka_committer, "control_plane",
                        lambda conf: FakeControlPlane([Errors.CoordinatorNotAvailableError("down")]))
    aborter = TransactionAborter({"bootstrap.servers": "x:1"}, TransactionalIdFactory("orders", slots=2), 0.3)
    with caplog.at_level(logging.WARNING):
        assert aborter.abort_lingering() == []
    assert "orders-0-1" in caplog.text


# ---- source: offset and metadata lookups ------------------------------------------------

def kafka_exc(code: int, retriable: bool = False) -> KafkaException:
    return KafkaException(KafkaError(code, "fake", retriable=retriable))


def failed(exc: BaseException) -> Future:
    future: Future = Future()
    future.set_exception(exc)
    return future


def done(offset: int) -> Future:
    future: Future = Future()
    future.set_result(type("R", (), {"offset": offset})())
    return future


class FakeAdmin:
    """list_offsets answers one scripted item per call: an exception for every partition,
    a per-partition callable, or an offset; list_topics likewise."""

    def __init__(self, offsets: list, topics: list | None = None) -> None:
        self.offsets, self.topics, self.calls = list(offsets), list(topics or []), 0

    def list_offsets(self, request, **kwargs):
        self.calls += 1
        item = self.offsets.pop(0) if len(self.offsets) > 1 else self.offsets[0]
        if isinstance(item, BaseException) and not isinstance(item, KafkaException):
            raise item
        return {ktp: failed(item) if isinstance(item, BaseException) else done(item) for ktp in request}

    def list_topics(self, timeout=None):
        self.calls += 1
        item = self.topics.pop(0) if len(self.topics) > 1 else self.topics[0]
        if isinstance(item, BaseException):
            raise item
        partitions = {0: None, 1: None}
        return type("M", (), {"topics": {"in": type("T", (), {"partitions": partitions, "error": None})()}})()


def offsets_with(monkeypatch, admin: FakeAdmin, timeout_s: float = 10.0) -> KafkaOffsets:
    monkeypatch.setattr(kafka_offsets, "AdminClient", lambda conf: admin)
    return KafkaOffsets({"bootstrap.servers": "x:1"}, timeout_s)


@pytest.mark.parametrize("failure", [
    kafka_exc(KafkaError._TIMED_OUT),          # what librdkafka answers while a leader is down
    kafka_exc(KafkaError._TRANSPORT),
    kafka_exc(KafkaError.NOT_LEADER_FOR_PARTITION),
    kafka_exc(KafkaError.LEADER_NOT_AVAILABLE, retriable=True),
    TimeoutError("future timed out"),          # future.result(timeout) while a broker is down
])
def test_latest_offsets_retry_transient_failures_within_one_deadline(monkeypatch, failure):
    admin = FakeAdmin([failure, failure, 42])
    kafka = offsets_with(monkeypatch, admin)
    assert kafka.latest([("in", 0), ("in", 1)]) == {("in", 0): 42, ("in", 1): 42}
    assert admin.calls == 3


def test_a_lookup_that_keeps_failing_names_the_partitions_and_the_fix(monkeypatch):
    kafka = offsets_with(monkeypatch, FakeAdmin([kafka_exc(KafkaError._TIMED_OUT)]), timeout_s=0.5)
    with pytest.raises(KafkaLookupError, match=r"in-0.*in-1|in\[0\]|partition") as info:
        kafka.latest([("in", 0), ("in", 1)])
    assert "bootstrap" in str(info.value) or "reachable" in str(info.value)


def test_a_non_retriable_lookup_error_fails_at_once(monkeypatch):
    admin = FakeAdmin([kafka_exc(KafkaError.TOPIC_AUTHORIZATION_FAILED)])
    with pytest.raises(KafkaLookupError):
        offsets_with(monkeypatch, admin).earliest([("in", 0)])
    assert admin.calls == 1


@pytest.mark.parametrize("failure", [kafka_exc(KafkaError._TIMED_OUT), kafka_exc(KafkaError._TRANSPORT),
                                     kafka_exc(KafkaError._ALL_BROKERS_DOWN), TimeoutError("timed out")])
def test_listing_topics_retries_transient_failures(monkeypatch, failure):
    admin = FakeAdmin([0], topics=[failure, None])
    assert offsets_with(monkeypatch, admin).listing() == {"in": [0, 1]}
    assert admin.calls == 2


@pytest.mark.parametrize("lookup", ["earliest", "latest"])
def test_an_answer_without_an_offset_is_retried_not_taken_as_an_offset(monkeypatch, lookup):
    # Seen in the broker-outage chaos run: with the partition's leader just killed, ListOffsets
    # answered OFFSET_INVALID (-1001) without an error. Taken as an offset, the source read
    # "offsets went backwards" and stopped the query with KafkaDataLossError.
    admin = FakeAdmin([-1001, -1001, 42])
    kafka = offsets_with(monkeypatch, admin)
    assert getattr(kafka, lookup)([("in", 0), ("in", 1)]) == {("in", 0): 42, ("in", 1): 42}
    assert admin.calls == 3


def test_each_retry_of_an_offset_lookup_asks_with_a_new_client(monkeypatch):
    # A client's cached metadata can name a leader that is down: in the broker-outage run, one
    # client answered OFFSET_INVALID for a partition for 30 s after its leader was killed.
    admin = FakeAdmin([-1001, -1001, 42])
    built = []
    monkeypatch.setattr(kafka_offsets, "AdminClient", lambda conf: built.append(conf) or admin)
    kafka = KafkaOffsets({"bootstrap.servers": "x:1"}, 10.0)
    assert kafka.latest([("in", 0)]) == {("in", 0): 42}
    assert len(built) == 3  # the first client, and one per retry


def test_an_answer_that_stays_without_an_offset_fails_naming_the_partitions(monkeypatch):
    kafka = offsets_with(monkeypatch, FakeAdmin([-1001]), timeout_s=0.5)
    with pytest.raises(KafkaLookupError, match=r"in.*0.*OFFSET_INVALID|OFFSET_INVALID"):
        kafka.latest([("in", 0)])


def test_a_timestamp_lookup_with_no_record_after_the_time_is_none_not_retried(monkeypatch):
    admin = FakeAdmin([-1])  # OFFSET_END: no record at or after the timestamp
    assert offsets_with(monkeypatch, admin).for_times({("in", 0): 1_000}) == {("in", 0): None}
    assert admin.calls == 1
