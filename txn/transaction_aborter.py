"""TransactionAborter: ends lingering transactions under a sink's transactional-id prefix.

A dead task attempt or a crashed run can leave a transaction Ongoing; it holds back the last
stable offset of its partitions (read_committed readers stall) until transaction.timeout.ms.
Invariant: this runs only when no live transaction under the prefix may still be committed,
i.e. after a batch's handles are all committed and before the next batch's tasks start.
Cleanup is best effort: ``abort_lingering`` never raises (a broker down must not fail a batch
that is already committed); what it could not clean is logged as a warning, with the reason,
and is tried again at the next call (or ends on transaction.timeout.ms).
"""
from __future__ import annotations

import logging
from typing import Mapping

import kafka.errors as Errors

from kafka_eos.txn.control_plane import control_plane
from kafka_eos.txn.handle import TxnHandle
from kafka_eos.txn.kafka_committer import KafkaCommitter
from kafka_eos.txn.transactional_ids import TransactionalIdFactory

log = logging.getLogger(__name__)


class TransactionAborter:
    def __init__(self, conf: Mapping[str, str], ids: TransactionalIdFactory, timeout_s: float = 60.0) -> None:
        self._conf, self._ids, self._timeout_s = conf, ids, timeout_s

    def ongoing(self) -> list[str]:
        """Transactional ids under our prefix whose transaction is Ongoing."""
        client = control_plane(self._conf)
        try:
            listings = client.list_transactions(state_filters=["Ongoing"],
                                                transactional_id_pattern=self._ids.pattern().pattern)
        except Errors.UnsupportedVersionError:  # brokers before 4.1: filter here
            listings = client.list_transactions(state_filters=["Ongoing"])
        rows = [t for per_broker in listings.values() for t in per_broker]
        return sorted(t.transactional_id for t in rows if self._ids.owns(t.transactional_id))

    def abort_lingering(self, keep: set[str] = frozenset()) -> list[str]:
        """Abort every Ongoing transaction under the prefix except ``keep``; return the ids aborted.
        Never raises: a failure is logged (what was not cleaned and why) and ``[]`` returned."""
        not_cleaned = f"the transactions under prefix {self._ids.pattern().pattern}"
        try:
            ids = [tid for tid in self.ongoing() if tid not in keep]
            if not ids:
                return []
            not_cleaned = ", ".join(ids)
            handles = self._handles(ids)
            KafkaCommitter(self._conf, self._timeout_s).abort(handles)
        except Exception as exc:  # noqa: BLE001 - best effort by contract
            log.warning("kafka-eos: lingering-transaction cleanup failed, not cleaned: %s (%r); tried again "
                        "at the next call, or the broker aborts them at transaction.timeout.ms (read_committed "
                        "readers of their partitions wait until then)", not_cleaned, exc)
            return []
        if handles:
            log.warning("kafka-eos: aborted %d lingering transaction(s): %s", len(handles),
                        ", ".join(h.transactional_id for h in handles))
        return [h.transactional_id for h in handles]

    def _handles(self, ids: list[str]) -> list[TxnHandle]:
        described = control_plane(self._conf).describe_transactions(ids)
        return [TxnHandle(sink_partition=i, transactional_id=tid, producer_id=d.producer_id,
                          producer_epoch=d.producer_epoch, records=1)
                for i, (tid, d) in enumerate(sorted(described.items()))
                if d.state.value == "Ongoing"]
