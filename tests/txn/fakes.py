"""Shared fakes and factories of the txn unit tests: handles, a committer answering from a table,
an aborter that counts, and a protocol over a real sink log in a temporary directory."""
from __future__ import annotations

from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLog
from kafka_eos.txn.protocol.states import EndTxnOutcome


def handle(k: int, records: int = 5, epoch: int = 0, slot: int = 0, topic: str | None = None) -> TxnHandle:
    """The pre-committed transaction of sink partition ``k`` (id ``p-<k>-<slot>``, producer id 100 + k);
    with ``topic``, its records are counted on that topic's partition 0."""
    return TxnHandle(sink_partition=k, transactional_id=f"p-{k}-{slot}", producer_id=100 + k, producer_epoch=epoch,
                     records=records, partitions={topic: {"0": records}} if topic else {})


class FakeCommitter:
    """Stands in for EndTxn: records the sink partitions committed and aborted, answers from a table."""

    def __init__(self, answers: dict[int, EndTxnOutcome] | None = None):
        self.answers, self.committed, self.aborted = answers or {}, [], []

    def commit(self, handles):
        self.committed += [h.sink_partition for h in handles]
        return {h.sink_partition: self.answers.get(h.sink_partition, EndTxnOutcome.COMMITTED) for h in handles}

    def abort(self, handles):
        self.aborted += [h.sink_partition for h in handles]
        return {h.sink_partition: EndTxnOutcome.ABORTED for h in handles}


class NoAborter:
    """Counts the sweeps of lingering transactions; aborts nothing."""

    def __init__(self):
        self.calls = 0

    def abort_lingering(self, keep=frozenset()):
        self.calls += 1
        return []


def protocol(tmp_path, answers=None, hooks=None, query_id=None) -> TwoPhaseCommitProtocol:
    return TwoPhaseCommitProtocol(SinkLog(str(tmp_path), "p", query_id), FakeCommitter(answers), NoAborter(),
                                  hooks=hooks)


def append_path(log: SinkLog, *records: BatchRecord) -> BatchRecord:
    """Append ``records`` of one batch in order, each after the one before (the first after the batch's
    current state); returns the last one written."""
    base = log.get(records[0].batch_id)
    for record in records:
        base = log.append(record, base)
    return base
