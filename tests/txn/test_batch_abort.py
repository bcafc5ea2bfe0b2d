"""The driver's abort of a failed batch: by transactional id, never a decided batch (fakes)."""
from __future__ import annotations

import logging

from kafka_eos.txn.protocol.protocol import SWEEP_DELAY_S, TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter
from kafka_eos.txn.protocol.transactional_ids import ATTEMPT_IDS, TransactionalIdFactory
from tests.txn.fakes import handle




class FakeCommitter:
    def __init__(self, fail: bool = False):
        self.committed, self.fail = [], fail

    def commit(self, handles):
        if self.fail:
            raise TimeoutError("brokers down")
        self.committed += [h.transactional_id for h in handles]
        return {h.sink_partition: COMMITTED for h in handles}

    def abort(self, handles):
        raise AssertionError("the batch abort goes by transactional id, through the aborter")


class RecordingAborter:
    def __init__(self):
        self.ids = TransactionalIdFactory("p")
        self.sweeps: list[tuple[set, set]] = []
        self.lingering: list[set] = []

    def ids_of_batch(self, batch_id, sink_partitions):
        return TransactionAborter({}, self.ids).ids_of_batch(batch_id, sink_partitions)

    def abort_ids(self, ids, keep=frozenset()):
        self.sweeps.append((set(ids), set(keep)))
        return []

    def abort_lingering(self, keep=frozenset()):
        self.lingering.append(set(keep))
        return []


def protocol(tmp_path, committer=None):
    slept = []
    proto = TwoPhaseCommitProtocol(SinkLog(str(tmp_path), "p"), committer or FakeCommitter(), RecordingAborter(),
                                   sleep=slept.append)
    return proto, slept


def test_a_failed_batch_sweeps_every_id_it_can_have_used_twice(tmp_path):
    proto, slept = protocol(tmp_path)
    proto.abort_batch(5, [handle(0, slot=7)], sink_partitions=3)
    every = {f"p-{p}-{s}" for p in range(3) for s in (1, 3, 5, 7)}  # batch 5: slot 1 + 2 * attempt
    assert len(every) == 3 * ATTEMPT_IDS
    assert [ids for ids, _ in proto.aborter.sweeps] == [every, every]
    assert slept == [SWEEP_DELAY_S]


def test_a_decided_batch_is_committed_not_aborted(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    log.append(BatchRecord(5, DECIDED, 2, (handle(0, slot=1), handle(1, slot=1)), {0: "pending", 1: "pending"}), None)
    proto, _ = protocol(tmp_path)
    proto.abort_batch(5, [handle(0, slot=1), handle(1, slot=1)], sink_partitions=2)
    assert proto.committer.committed == ["p-0-1", "p-1-1"] and log.get(5).state == "committed"
    assert proto.aborter.sweeps[0][1] == set()  # committed: only losing attempts remain to abort


def test_a_decided_batch_the_brokers_refuse_now_is_kept_for_the_next_start(tmp_path, caplog):
    log = SinkLog(str(tmp_path), "p")
    log.append(BatchRecord(5, DECIDED, 2, (handle(0, slot=1), handle(1, slot=1)), {0: "pending", 1: "pending"}), None)
    proto, _ = protocol(tmp_path, FakeCommitter(fail=True))
    with caplog.at_level(logging.WARNING):
        proto.abort_batch(5, [], sink_partitions=2)
    assert log.get(5).state == DECIDED and "next start commits it" in caplog.text
    assert proto.aborter.sweeps == [(proto.aborter.ids_of_batch(5, 2), {"p-0-1", "p-1-1"})]


def test_a_failed_batch_keeps_the_ids_of_an_earlier_decided_batch(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    log.append(BatchRecord(4, DECIDED, 1, (handle(0, slot=0),), {0: "pending"}), None)
    proto, _ = protocol(tmp_path)
    proto.abort_batch(5, [], sink_partitions=1)
    assert all(keep == {"p-0-0"} for _, keep in proto.aborter.sweeps)


def test_release_commits_a_decided_batch_then_sweeps_the_prefix(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    log.append(BatchRecord(4, DECIDED, 1, (handle(0, slot=0),), {0: "pending"}), None)
    proto, _ = protocol(tmp_path)
    proto.release()
    assert proto.committer.committed == ["p-0-0"] and proto.aborter.lingering == [set()]
    down, _ = protocol(tmp_path / "other", FakeCommitter(fail=True))
    SinkLog(str(tmp_path / "other"), "p").append(BatchRecord(4, DECIDED, 1, (handle(0, slot=0),), {0: "pending"}), None)
    down.release()
    assert down.aborter.lingering == [{"p-0-0"}]


class FakePlane:
    """ListTransactions / DescribeTransactions / EndTxn of a broker holding ``ongoing`` ids."""

    def __init__(self, ongoing: dict[str, int]):
        self.ongoing, self.ended = dict(ongoing), []

    def live_brokers(self):
        return [1]

    def list_transactions(self, **kwargs):
        return {1: [type("T", (), {"transactional_id": t})() for t in self.ongoing]}

    def describe_transactions(self, ids):
        state = type("S", (), {"value": "Ongoing"})()
        return {t: type("D", (), {"producer_id": 7, "producer_epoch": self.ongoing[t], "state": state})()
                for t in ids}

    def end_txn_round(self, requests, commit):
        assert not commit
        self.ended += requests
        return {tid: 0 for tid, _, _ in requests}

    def forget_coordinators(self, ids):
        pass


def test_abort_ids_ends_only_the_ids_given_and_not_kept_with_their_epoch(monkeypatch):
    plane = FakePlane({"p-0-1": 3, "p-1-1": 0, "p-0-0": 2, "other-0-1": 0})
    aborter = TransactionAborter({"bootstrap.servers": "x:1"}, TransactionalIdFactory("p"), 1.0, lambda conf: plane)
    assert aborter.abort_ids({"p-0-1", "p-1-1", "p-2-1"}, keep={"p-1-1"}) == ["p-0-1"]
    assert plane.ended == [("p-0-1", 7, 3)]
    assert sorted(aborter.abort_lingering(keep={"p-1-1"})) == ["p-0-0", "p-0-1"]
