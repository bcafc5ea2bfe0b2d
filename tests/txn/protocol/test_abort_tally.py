"""The aborts a protocol makes reach the sink log: each committed record carries, by reason, the
transactions aborted since the record before it (real sink log, fake EndTxn)."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.abort_tally import AbortTally, aborted_in
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_log import SinkLog
from tests.txn.fakes import FakeCommitter, handle


class ListedAborter:
    """Aborts what it is told to find: ``lingering`` for each sweep, ``by_id`` for each sweep by id."""

    def __init__(self, lingering: list[list[str]], by_id: list[list[str]]):
        self.lingering, self.by_id = lingering, by_id

    def abort_lingering(self, keep=frozenset()):
        return self.lingering.pop(0) if self.lingering else []

    def abort_ids(self, ids, keep=frozenset()):
        return self.by_id.pop(0) if self.by_id else []

    def ids_of_batch(self, batch_id, sink_partitions):
        return {f"p-{k}-{batch_id % 2}" for k in range(sink_partitions)}


def test_each_record_reports_the_aborts_since_the_record_before(tmp_path, monkeypatch):
    monkeypatch.setattr("kafka_eos.txn.protocol.protocol.SWEEP_DELAY_S", 0)
    aborter = ListedAborter(lingering=[["old-1", "old-2"], [], []], by_id=[["p-0-0"], []])
    proto = TwoPhaseCommitProtocol(SinkLog(str(tmp_path), "p"), FakeCommitter(), aborter, sleep=lambda s: None)

    first = proto.commit_batch(0, [handle(0), handle(1)])
    assert aborted_in(first.metrics) == {"replay_duplicate": 0, "lingering": 0, "failed_batch": 0}, \
        "step 7 runs after the record: its two aborts belong to the next one"

    proto.abort_batch(1, [handle(0, slot=1)], sink_partitions=2)   # the engine gave up on batch 1
    proto.commit_batch(0, [handle(0), handle(1)])                  # a replay of committed batch 0: both aborted
    second = proto.commit_batch(1, [handle(0, slot=1), handle(1, slot=1)])
    assert aborted_in(second.metrics) == {"replay_duplicate": 2, "lingering": 2, "failed_batch": 1}

    third = proto.commit_batch(2, [handle(0), handle(1)])
    assert aborted_in(third.metrics) == {"replay_duplicate": 0, "lingering": 0, "failed_batch": 0}, \
        "each abort is reported once"
    assert aborted_in(SinkLog(str(tmp_path), "p").get(1).metrics)["failed_batch"] == 1, "durable in the log"


def test_a_record_written_before_the_tally_reports_no_aborts_and_bad_counts_are_refused():
    assert aborted_in({"records": 5.0}) == {"replay_duplicate": 0, "lingering": 0, "failed_batch": 0}
    tally = AbortTally()
    with pytest.raises(ValueError, match="unknown abort reason"):
        tally.add("fenced", 1)
    with pytest.raises(ValueError, match="never negative"):
        tally.add("lingering", -1)
