"""TransactionAborter: ends Ongoing transactions under a sink's transactional-id prefix, by id.

A dead or cancelled task attempt, a failed batch or a crashed run can leave a transaction
Ongoing; it holds back the last stable offset of its partitions (read_committed readers stall)
until transaction.timeout.ms. Enforced here:
- only Ongoing transactions under the prefix (``TransactionalIdFactory.owns``) are ended, each
  with EndTxn(abort) under the producer id and epoch DescribeTransactions gives for it now; the
  ids in ``keep`` (a decided batch's transactions, still to be committed) are never touched;
- ``abort_lingering`` sweeps every id under the prefix; ``abort_ids`` only the ids given (a
  failed batch's, ``ids_of_batch``), so it may run while other batches' transactions are open;
- best effort: it never raises (a broker down must not fail what is already decided); what it
  could not end is logged as a warning, with the reason, and tried again at the next call (or
  ends on transaction.timeout.ms). Retriable answers are retried within ``timeout_s``.
Callers decide when a sweep is safe and what it keeps (``TwoPhaseCommitProtocol``; the sink's
query start, before any task of the query's first batch in the process, keeping a pending decision's ids).
"""
from __future__ import annotations

import logging
from typing import Collection, Iterable, Mapping

import kafka.errors as Errors
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from kafka_eos.kafka_clients import is_transient
from kafka_eos.txn.cluster.control_plane import ControlPlaneFactory, control_plane
from kafka_eos.txn.protocol.transactional_ids import ATTEMPT_IDS, TransactionalIdFactory

log = logging.getLogger(__name__)
_AGAIN = {-1, Errors.RequestTimedOutError.errno, Errors.CoordinatorLoadInProgressError.errno,
          Errors.CoordinatorNotAvailableError.errno, Errors.NotCoordinatorError.errno,
          Errors.ConcurrentTransactionsError.errno}
_MOVED = {-1, Errors.CoordinatorNotAvailableError.errno, Errors.NotCoordinatorError.errno}
_NOT_FOUND = (Errors.TransactionalIdNotFoundError, Errors.InvalidProducerIdMappingError)


class _Again(Exception):
    pass


class TransactionAborter:
    def __init__(self, conf: Mapping[str, str], ids: TransactionalIdFactory, timeout_s: float = 60.0,
                 control_plane: ControlPlaneFactory = control_plane) -> None:
        self._conf, self._ids, self._timeout_s, self._control_plane = conf, ids, timeout_s, control_plane

    def ids_of_batch(self, batch_id: int, sink_partitions: int) -> set[str]:
        """Every transactional id a task of ``batch_id`` can have used (any attempt)."""
        return {self._ids.id_for(p, batch_id, a) for p in range(sink_partitions) for a in range(ATTEMPT_IDS)}

    def ongoing(self) -> list[str]:
        """Transactional ids under our prefix whose transaction is Ongoing, as the brokers that answer
        list them (ListTransactions is per broker: one that does not answer is named in a warning;
        its coordinator partitions have usually moved to one that does, and the next sweep asks again)."""
        ids, silent = self.listing()
        if silent:
            log.warning("kafka-eos: broker(s) %s did not answer ListTransactions; the open transactions they "
                        "coordinate are swept at the next cleanup (or end at transaction.timeout.ms)",
                        ", ".join(map(str, silent)))
        return ids

    def listing(self) -> tuple[list[str], list[int]]:
        """(the Ongoing ids under our prefix the answering brokers list, the brokers that did not answer)."""
        client = self._control_plane(self._conf)
        rows, silent = [], []
        for broker in client.live_brokers():
            try:
                rows += self._list(client, broker)
            except Exception as exc:  # noqa: BLE001 - classified: only a broker that does not answer is passed over
                if not is_transient(exc):
                    raise
                silent.append(broker)
        return sorted(t.transactional_id for t in rows if self._ids.owns(t.transactional_id)), silent

    def _list(self, client, broker: int) -> list:
        try:
            listing = client.list_transactions(broker_ids=[broker], state_filters=["Ongoing"],
                                               transactional_id_pattern=self._ids.pattern().pattern)
        except Errors.UnsupportedVersionError:  # brokers before 4.1: filter here
            listing = client.list_transactions(broker_ids=[broker], state_filters=["Ongoing"])
        return [t for per_broker in listing.values() for t in per_broker]

    def abort_lingering(self, keep: Collection[str] = frozenset()) -> list[str]:
        """Abort every Ongoing transaction under the prefix except ``keep``; return the ids aborted."""
        return self._sweep(None, keep)

    def abort_ids(self, ids: Iterable[str], keep: Collection[str] = frozenset()) -> list[str]:
        """Abort those of ``ids`` that are Ongoing, except ``keep``; return the ids aborted."""
        return self._sweep(set(ids), keep)

    def _sweep(self, wanted: set[str] | None, keep: Collection[str]) -> list[str]:
        not_cleaned = f"the transactions under prefix {self._ids.pattern().pattern}"
        try:
            ids = [t for t in self.ongoing() if t not in keep and (wanted is None or t in wanted)]
            if not ids:
                return []
            not_cleaned = ", ".join(ids)
            aborted = self._abort(ids)
        except Exception as exc:  # noqa: BLE001 - best effort by contract
            log.warning("kafka-eos: open-transaction cleanup failed, not cleaned: %s (%r); tried again at the "
                        "next call, or the broker aborts them at transaction.timeout.ms (read_committed readers "
                        "of their partitions wait until then)", not_cleaned, exc)
            return []
        if aborted:
            log.warning("kafka-eos: aborted %d open transaction(s): %s", len(aborted), ", ".join(aborted))
        return aborted

    def _abort(self, ids: list[str]) -> list[str]:
        client = self._control_plane(self._conf)
        aborted: list[str] = []
        left = list(ids)  # what the next round describes and ends; each round narrows it
        retrying = Retrying(stop=stop_after_delay(self._timeout_s), reraise=True,
                            wait=wait_exponential(multiplier=0.02, max=1.0),
                            retry=retry_if_exception_type(_Again))
        for attempt in retrying:
            with attempt:
                self._round(client, left, aborted)
        return aborted

    def _round(self, client, ids: list[str], aborted: list[str]) -> None:
        """Describe ``ids``, EndTxn(abort) the Ongoing ones; leave in ``ids`` those to retry, and
        raise ``_Again`` if any."""
        try:
            described = self._describe(client, ids)
            ongoing = {t: d for t, d in described.items() if d.state.value == "Ongoing"}
            codes = client.end_txn_round([(t, d.producer_id, d.producer_epoch) for t, d in ongoing.items()],
                                         False) if ongoing else {}
        except Exception as exc:  # noqa: BLE001 - classified
            if not is_transient(exc):
                raise
            client.forget_coordinators(ids)
            raise _Again() from exc
        aborted += [t for t, code in codes.items() if code == 0]
        client.forget_coordinators([t for t, code in codes.items() if code in _MOVED])
        ids[:] = [t for t, code in codes.items() if code in _AGAIN]
        for tid, code in codes.items():
            if code and code not in _AGAIN:  # fenced/ended meanwhile: no longer Ongoing under that epoch
                log.info("kafka-eos: EndTxn(abort) for %s answered %s", tid, Errors.for_code(code).__name__)
        if ids:
            raise _Again()

    @staticmethod
    def _describe(client, ids: list[str]) -> dict:
        try:
            return client.describe_transactions(ids)
        except _NOT_FOUND:  # one id expired meanwhile: describe the others one by one
            described = {}
            for tid in ids:
                try:
                    described.update(client.describe_transactions([tid]))
                except _NOT_FOUND:
                    continue
            return described
