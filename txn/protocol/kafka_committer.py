"""KafkaCommitter: the driver's EndTxn for pre-committed handles (Flink's KafkaCommitter).

Invariants:
- EndTxn is checked by the coordinator against (transactional id, producer id, epoch) only,
  so the driver can end a transaction an executor's producer opened.
- All handles of a batch are ended in parallel rounds; retriable answers (coordinator moving
  or loading, CONCURRENT_TRANSACTIONS while a previous end completes) are retried with
  exponential backoff until ``timeout_s``; a retry of a completed commit answers NONE.
- PRODUCER_FENCED / INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE on commit is resolved with
  DescribeTransactions: the same producer id and epoch in CompleteCommit means committed; the
  same producer id at an OLDER epoch is a stale coordinator's answer (a broker resumed after a
  hang still serving its old view): its coordinator is forgotten and the handle asked again in
  the next round; anything else means the broker aborted it (timeout) or a newer writer fenced
  it: LOST.
- The control plane degrades, it does not fail: a round that raises (FindCoordinator answering
  COORDINATOR_NOT_AVAILABLE / LOAD_IN_PROGRESS / NOT_COORDINATOR, a connection refused or
  timed out while a broker is down or hung: ``kafka_clients.is_transient``) forgets the
  coordinators it knew and is retried within ``timeout_s`` (commit.timeout.ms, default 120 s);
  one request waits at most 10 s (``kafka_clients.TIMEOUTS["control.end_txn"]``), so a hung
  coordinator costs one request, not the deadline. Only non-retriable errors (ACLs, ...) fail at once.
- EndTxn stays at v4 (transactions v1) on a ``transaction.version=2`` broker too: it commits or
  aborts a transaction a v2 (KIP-890) producer opened, and a v1 EndTxn does not bump the epoch, so
  the handle's (producer id, epoch) still matches DescribeTransactions after the commit and a
  retry answers committed (``integration_tests/broker/test_txn_v2.py``); no epoch rollover happens here.
- INVALID_PRODUCER_ID_MAPPING / TRANSACTIONAL_ID_NOT_FOUND (the id expired during a long outage)
  on a decided handle is LOST (the batch is re-written), on an abort it is ABORTED.
"""
from __future__ import annotations

import logging
from typing import Iterable, Mapping, cast

import kafka.errors as Errors
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from kafka_eos.kafka_clients import COMMIT_DEADLINE_MS, is_transient
from kafka_eos.txn.cluster.control_plane import ControlPlaneFactory, control_plane
from kafka_eos.txn.protocol.errors import TwoPhaseCommitError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.states import EndTxnOutcome

log = logging.getLogger(__name__)
COMMITTED, ABORTED, LOST = EndTxnOutcome.COMMITTED, EndTxnOutcome.ABORTED, EndTxnOutcome.LOST
Outcomes = dict[int, EndTxnOutcome]  # sink partition -> COMMITTED | LOST (commit) or ABORTED (abort)
_RETRY = {-1, Errors.RequestTimedOutError.errno, Errors.CoordinatorLoadInProgressError.errno,
          Errors.CoordinatorNotAvailableError.errno, Errors.NotCoordinatorError.errno,
          Errors.ConcurrentTransactionsError.errno, Errors.KafkaStorageError.errno,
          Errors.NotEnoughReplicasError.errno, Errors.NotEnoughReplicasAfterAppendError.errno}
_MOVED = {-1, Errors.CoordinatorNotAvailableError.errno, Errors.NotCoordinatorError.errno}
_NOT_OURS = {Errors.ProducerFencedError.errno, Errors.InvalidProducerEpochError.errno,
             Errors.InvalidTxnStateError.errno}
_EXPIRED = {Errors.InvalidProducerIdMappingError.errno, Errors.TransactionalIdNotFoundError.errno}


class _RoundIncomplete(Exception):
    pass


class KafkaCommitter:
    """EndTxn for handles, through the client ``control_plane(conf)`` gives (the process-wide
    control-plane client by default; a test passes a fake factory)."""

    def __init__(self, conf: Mapping[str, str], timeout_s: float = COMMIT_DEADLINE_MS / 1000,
                 control_plane: ControlPlaneFactory = control_plane) -> None:
        self._conf = conf
        self._timeout_s = timeout_s
        self._control_plane = control_plane

    def commit(self, handles: Iterable[TxnHandle]) -> Outcomes:
        """EndTxn(commit) every handle; return sink partition -> committed | lost."""
        return self._end(list(handles), commit=True)

    def abort(self, handles: Iterable[TxnHandle]) -> Outcomes:
        """EndTxn(abort) every handle (already-ended or fenced ones count as aborted)."""
        return self._end(list(handles), commit=False)

    def _end(self, handles: list[TxnHandle], commit: bool) -> Outcomes:
        # cast: has_transaction means the handle has a transactional id
        pending = {cast(str, h.transactional_id): h for h in handles if h.has_transaction}
        outcomes: Outcomes = {}
        if not pending:
            return outcomes
        client = self._control_plane(self._conf)
        retrying = Retrying(stop=stop_after_delay(self._timeout_s), reraise=True,
                            wait=wait_exponential(multiplier=0.02, max=2.0),
                            retry=retry_if_exception_type(_RoundIncomplete))
        try:
            for attempt in retrying:
                with attempt:
                    self._guarded_round(client, pending, outcomes, commit)
        except _RoundIncomplete:
            raise TwoPhaseCommitError(
                f"EndTxn({'commit' if commit else 'abort'}) did not complete within {self._timeout_s:.0f}s "
                f"for {sorted(pending)}; the transactions stay decided and are retried on restart") from None
        return outcomes

    def _guarded_round(self, client, pending: dict[str, TxnHandle], outcomes: Outcomes, commit: bool) -> None:
        """One round; a transient failure of the round itself (FindCoordinator, connection) retries it."""
        try:
            self._round(client, pending, outcomes, commit)
        except (_RoundIncomplete, TwoPhaseCommitError):
            raise
        except Exception as exc:  # noqa: BLE001 - classified below
            if not is_transient(exc):
                raise TwoPhaseCommitError(
                    f"EndTxn for {sorted(pending)} failed: {exc!r}; check the principal's TransactionalId "
                    "WRITE/DESCRIBE ACLs, the connection settings and the broker log") from exc
            log.warning("kafka-eos: EndTxn round for %d transaction(s) failed (%r); retrying within %.0fs "
                        "(commit.timeout.ms)", len(pending), exc, self._timeout_s)
            client.forget_coordinators(list(pending))
            raise _RoundIncomplete() from exc

    def _round(self, client, pending: dict[str, TxnHandle], outcomes: Outcomes, commit: bool) -> None:
        codes = client.end_txn_round([(h.transactional_id, h.producer_id, h.producer_epoch)
                                      for h in pending.values()], commit)
        moved = [tid for tid, code in codes.items() if code in _MOVED]
        if moved:
            client.forget_coordinators(moved)
        not_ours: list[tuple[str, TxnHandle]] = []
        for tid, code in codes.items():
            handle = pending[tid]
            if code == 0:
                outcomes[handle.sink_partition] = COMMITTED if commit else ABORTED
            elif code in _NOT_OURS:
                not_ours.append((tid, handle))
                continue
            elif code in _EXPIRED:
                outcomes[handle.sink_partition] = self._expired(handle, code, commit)
            elif code in _RETRY:
                continue
            else:
                raise TwoPhaseCommitError(
                    f"EndTxn for {tid} failed with {Errors.for_code(code).__name__} ({code}); "
                    "check the principal's TransactionalId WRITE/DESCRIBE ACLs and the broker log")
            del pending[tid]
        for tid, handle in not_ours:  # tid is handle.transactional_id: pending's key
            outcome = self._resolve_not_ours(client, handle, commit)
            if outcome is None:  # a stale coordinator answered: the next round asks the current one
                client.forget_coordinators([tid])
                continue
            outcomes[handle.sink_partition] = outcome
            del pending[tid]
        if pending:
            raise _RoundIncomplete()

    @staticmethod
    def _expired(handle: TxnHandle, code: int, commit: bool) -> EndTxnOutcome:
        if not commit:
            return ABORTED
        log.error("transactional id %s (producer %d epoch %d) expired on the broker (%s): the decided "
                  "transaction cannot be committed any more; its %d records are LOST and re-written by the "
                  "replay", handle.transactional_id, handle.producer_id, handle.producer_epoch,
                  Errors.for_code(code).__name__, handle.records)
        return LOST

    @staticmethod
    def _resolve_not_ours(client, handle: TxnHandle, commit: bool) -> EndTxnOutcome | None:
        """COMMITTED or LOST by DescribeTransactions; None when the answer came from a stale
        coordinator (the same producer id at an OLDER epoch than the producer was given: a broker
        that hung or was cut off and has not yet learnt it lost the transaction log partition)."""
        if not commit:
            return ABORTED
        try:
            described = client.describe_transactions([handle.transactional_id])[handle.transactional_id]
        except (Errors.TransactionalIdNotFoundError, Errors.InvalidProducerIdMappingError) as exc:
            return KafkaCommitter._expired(handle, exc.errno, commit)
        if described.producer_id == handle.producer_id and described.producer_epoch < handle.producer_epoch:
            log.warning("transaction %s (producer %d epoch %d): its coordinator answered epoch %d (%s), older "
                        "than the producer's: a stale coordinator; asking the current one", handle.transactional_id,
                        handle.producer_id, handle.producer_epoch, described.producer_epoch, described.state.value)
            return None
        same = (described.producer_id, described.producer_epoch) == (handle.producer_id, handle.producer_epoch)
        if same and described.state.value == "CompleteCommit":
            return COMMITTED
        log.error("transaction %s (producer %d epoch %d) was aborted by the broker or fenced "
                  "(now %s, epoch %d): its %d records are lost from this attempt",
                  handle.transactional_id, handle.producer_id, handle.producer_epoch,
                  described.state.value, described.producer_epoch, handle.records)
        return LOST
