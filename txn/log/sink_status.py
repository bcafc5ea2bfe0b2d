"""What a sink's commit protocol has left behind, read without changing anything.

``classify`` names the state of the sink log's last decision:
    none             -> no batch was ever decided;
    committed        -> every transaction of the last decided batch is committed;
    decided-pending  -> the batch is decided, some transactions are not committed yet (a crash
                        between the decision and the commit): the next run commits them;
    lost             -> the broker aborted some decided transactions before they were committed:
                        the next run replays the batch and re-writes those sink partitions.
``open_transactions`` lists the Ongoing transactions under a transactional-id prefix
(``TransactionAborter.listing``; ``prefix_ids``: every id under a sink's prefix, whatever its
owner) with their age (broker start time against ``now_ms``) and their own
``transaction.timeout.ms`` (DescribeTransactions); a broker that does not answer makes the listing
fail (``ListingIncomplete``), never a short list. Reads only: nothing is committed or aborted.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from kafka_eos.txn.cluster.control_plane import control_plane
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLogReader
from kafka_eos.txn.protocol.states import BatchState, PartitionState
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter
from kafka_eos.txn.protocol.transactional_ids import PrefixWideIds, TransactionalIdFactory


class DecisionState(str, Enum):
    NONE = "none"
    COMMITTED = "committed"
    DECIDED_PENDING = "decided-pending"
    LOST = "lost"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class PendingTransaction:
    """A decided, not yet committed transaction as the sink log recorded it."""
    sink_partition: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    records: int


@dataclass(frozen=True)
class Decision:
    """The sink log's last decision, classified."""
    state: DecisionState
    batch_id: int | None = None
    num_partitions: int = 0
    records: int = 0
    committed: tuple[int, ...] = ()
    pending: tuple[PendingTransaction, ...] = ()
    lost: tuple[int, ...] = ()
    lost_records: int = 0


def classify(record: BatchRecord | None) -> Decision:
    """The state of ``record`` (the log's newest batch record; None: an empty log)."""
    if record is None:
        return Decision(DecisionState.NONE)
    lost = tuple(sorted(record.partitions_with(PartitionState.LOST)))
    pending = tuple(PendingTransaction(h.sink_partition, h.transactional_id or "", h.producer_id,
                                       h.producer_epoch, h.records)
                    for h in sorted(record.handles_with(PartitionState.PENDING), key=lambda h: h.sink_partition)
                    if h.has_transaction)
    if record.state == BatchState.COMMITTED:
        state = DecisionState.COMMITTED
    else:
        state = DecisionState.LOST if lost else DecisionState.DECIDED_PENDING
    return Decision(state, record.batch_id, record.num_partitions, sum(h.records for h in record.handles),
                    tuple(sorted(record.partitions_with(PartitionState.COMMITTED))), pending, lost,
                    sum(record.records_of(p) for p in lost))


def last_decision(location: str) -> Decision:
    """``classify`` of the newest record of the sink log at ``location`` (read only)."""
    return classify(SinkLogReader(location).latest())


@dataclass(frozen=True)
class OpenTransaction:
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    age_ms: int
    timeout_ms: int
    partitions: tuple[str, ...] = ()  # "topic-partition" the transaction wrote to

    @property
    def remaining_ms(self) -> int:
        """Time until the broker aborts it (transaction.timeout.ms), never negative."""
        return max(0, self.timeout_ms - self.age_ms)

    def is_of(self, pending: PendingTransaction) -> bool:
        """True when this is the very transaction ``pending`` names (same id, producer and epoch)."""
        return (self.transactional_id, self.producer_id, self.producer_epoch) == \
            (pending.transactional_id, pending.producer_id, pending.producer_epoch)


def open_from(described: Mapping[str, Any], now_ms: int) -> list[OpenTransaction]:
    """``OpenTransaction`` rows of DescribeTransactions answers (transactional id -> description
    with state, producer_id, producer_epoch, transaction_timeout_ms, transaction_start_time_ms,
    topic_partitions), Ongoing ones only, oldest first."""
    rows = []
    for tid, d in described.items():
        state = getattr(d.state, "value", d.state)
        if state != "Ongoing":
            continue
        start = d.transaction_start_time_ms
        rows.append(OpenTransaction(tid, state, d.producer_id, d.producer_epoch,
                                    max(0, now_ms - start) if start >= 0 else 0, d.transaction_timeout_ms,
                                    tuple(sorted(f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions))))
    return sorted(rows, key=lambda t: (-t.age_ms, t.transactional_id))


class ListingIncomplete(TimeoutError):
    """A broker did not answer ListTransactions: the open transactions it coordinates are unknown."""


def prefix_ids(sink: SinkConfig) -> PrefixWideIds:
    """Every transactional id under ``sink``'s prefix, whatever its owner (read-only listings)."""
    return TransactionalIdFactory(sink.transactional_id_prefix, sink.slots).prefix_wide()


def open_transactions(conf: Mapping[str, str], ids: TransactionalIdFactory,
                      now_ms: int | None = None) -> list[OpenTransaction]:
    """The Ongoing transactions under ``ids``' prefix on the cluster of ``conf`` (librdkafka settings)."""
    ongoing, silent = TransactionAborter(conf, ids).listing()
    if silent:
        raise ListingIncomplete(f"broker(s) {', '.join(map(str, silent))} did not answer ListTransactions: the "
                                "open transactions they coordinate are not known")
    if not ongoing:
        return []
    described = control_plane(conf).describe_transactions(ongoing)
    return open_from(described, int(time.time() * 1000) if now_ms is None else now_ms)


def still_open(decision: Decision, open_now: list[OpenTransaction]) -> tuple[list[OpenTransaction],
                                                                               list[PendingTransaction]]:
    """(the open transactions that are the decision's pending ones, the pending ones no longer
    open: ended already - committed by a run that crashed before recording it, or aborted by the
    broker, which the next run finds and re-writes)."""
    matched = [t for t in open_now if any(t.is_of(p) for p in decision.pending)]
    gone = [p for p in decision.pending if not any(t.is_of(p) for t in open_now)]
    return matched, gone
