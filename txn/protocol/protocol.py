"""The two-phase commit of one batch, and recovery, as numbered steps.

Executors pre-commit (``KafkaWriter``); the driver then runs ``commit_batch``:
  1. a batch already committed (a replay after a crash before the engine's commit log)
     commits nothing again: duplicate transactions of the replay are aborted;
  2. merge with a previous decision of this batch (a replay after lost transactions): keep
     durable partitions, take the re-written ones; the replay must have the decided rows: as
     many sink partitions and, per sink partition (empty ones too), the decided record count,
     else its transactions are aborted and ``ReplayMismatchError`` stops the query;
  2b. the output topics are still the ones earlier batches wrote to (``topic_check``, e.g.
     ``OutputTopicGuard.before_decision``): if not, the batch's transactions are aborted and its
     ``OutputTopicChangedError`` stops the query;
  3. record the decision (batch id + every handle, and ``inputs``: the engine's description of the
     batch's input, opaque here, for a later re-run) durably in the sink log, create-only: a
     record another run wrote meanwhile stops this one (``SinkLogConflictError``), never overwritten;
  4. EndTxn(commit) every pending handle, in parallel, with retries;
  5. a handle the broker aborted meanwhile is recorded as lost and ``TransactionLostError`` stops
     the query: the restart replays the batch and re-writes exactly the lost partitions;
  6. record the batch committed (with its metrics, and the aborts since the last record: ``AbortTally``);
  7. abort lingering transactions under the prefix (dead attempts, an older run);
  8. prune the sink log: roll old committed batches into segments, drop what is past the evidence
     retention (``SinkLog.prune``).
``recover`` runs before any task of a batch starts: it finishes a decided batch (steps 4-6;
handles the broker aborted meanwhile are recorded lost, not raised) and returns the
``ReplayPlan`` that tells tasks which sink partitions are already durable: the engine's replay of
that batch re-writes exactly the others (tasks of durable partitions write nothing but count
their rows, for step 2's check).
``abort_batch`` runs when the engine gives up on a batch (its job failed, or ``commit_batch``
raised): a batch with a decision in the sink log is never aborted (it is committed, or left
decided for the next start); otherwise every id the batch can have used is swept, twice
(``SWEEP_DELAY_S`` apart: tasks the engine cancels may still open a transaction meanwhile).
``release`` runs once the query ended (failed or stopped, no task left): it finishes a decided
batch if the brokers allow and aborts every other Ongoing transaction under the prefix.
The collaborators are passed in; ``from_config`` builds the production ones.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Collection, Iterable, Protocol, cast

from kafka_eos.txn.protocol.abort_tally import FAILED_BATCH, LINGERING, REPLAY_DUPLICATE, AbortTally
from kafka_eos.txn.protocol.errors import OutputTopicChangedError, TransactionLostError
from kafka_eos.txn.protocol.fault_injection import FaultInjectingCommitter, FaultInjectingHooks
from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.kafka_committer import KafkaCommitter, Outcomes
from kafka_eos.txn.protocol.replay import ReplayPlan, replay_mismatch
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLog
from kafka_eos.txn.protocol.states import BatchState, EndTxnOutcome, PartitionState
from kafka_eos.txn.protocol.steps import Step, StepHooks
from kafka_eos.txn.protocol.timeouts import DEFAULT_TRANSACTION_TIMEOUT_MS
from kafka_eos.txn.topics.topic_guard import OutputTopicGuard
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter

log = logging.getLogger(__name__)
DECIDED, COMMITTED = BatchState.DECIDED, BatchState.COMMITTED
PENDING, LOST = PartitionState.PENDING, PartitionState.LOST


class Committer(Protocol):
    def commit(self, handles: Iterable[TxnHandle]) -> Outcomes: ...
    def abort(self, handles: Iterable[TxnHandle]) -> Outcomes: ...


TopicCheck = Callable[[int, list[TxnHandle]], None]  # raises OutputTopicChangedError


class Aborter(Protocol):
    def abort_lingering(self, keep: Collection[str] = ...) -> list[str]: ...
    def abort_ids(self, ids: Iterable[str], keep: Collection[str] = ...) -> list[str]: ...
    def ids_of_batch(self, batch_id: int, sink_partitions: int) -> set[str]: ...


# A cancelled task's Python worker is killed spark.python.task.killTimeout (2 s) after the cancel:
# a transaction it opened before that is ended by the second sweep.
SWEEP_DELAY_S = 3.0


class TwoPhaseCommitProtocol:
    def __init__(self, sink_log: SinkLog, committer: Committer, aborter: Aborter, *,
                 transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS, hooks: StepHooks | None = None,
                 topic_check: TopicCheck | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.log, self.committer, self.aborter, self._sleep = sink_log, committer, aborter, sleep
        self.aborts = AbortTally()  # reported by the next committed record's metrics
        self.topic_check = topic_check or (lambda batch_id, handles: None)
        self.transaction_timeout_ms = transaction_timeout_ms  # named by TransactionLostError
        self.hooks = hooks or StepHooks()

    @classmethod
    def from_config(cls, config: SinkConfig, query_id: str | None = None,
                    faults: FaultPlan | None = None) -> "TwoPhaseCommitProtocol":
        """The production protocol of a sink (its sink log pinned to ``query_id``); with an active
        fault plan, its committer and step hooks are wrapped to pause at the plan's points."""
        sink_log = SinkLog(config.log_location, config.transactional_id_prefix, query_id,
                           retention_ms=config.evidence_retention_ms)
        kafka_committer = KafkaCommitter(config.client_conf(), config.commit_timeout_s)
        committer: Committer = kafka_committer
        aborter = TransactionAborter(config.client_conf(), config.ids, config.commit_timeout_s)
        hooks = StepHooks()
        if faults is not None and faults.active:
            hooks = FaultInjectingHooks(faults)
            committer = FaultInjectingCommitter(kafka_committer, hooks)
        return cls(sink_log, committer, aborter, transaction_timeout_ms=config.transaction_timeout_ms, hooks=hooks,
                   topic_check=OutputTopicGuard.from_config(config).before_decision)

    # -- recovery ------------------------------------------------------------------------
    def recover(self) -> ReplayPlan:
        """Finish the last decided batch (the query start's lingering-transaction abort follows it
        there, ``connectors/sink/query_start``)."""
        last = self.log.latest()
        if last is None:
            return ReplayPlan()
        if last.state == DECIDED and last.partitions_with(PENDING):
            log.warning("kafka-eos: batch %d was decided but not fully committed; committing it now",
                        last.batch_id)
            try:
                last = self._end(last)
            except TransactionLostError as lost:  # recorded as lost: this replay re-writes them
                log.warning("kafka-eos: %s", lost)
                # cast: the batch was read from the log above, and a record once written stays
                last = cast(BatchRecord, self.log.get(last.batch_id))
        return ReplayPlan(last.batch_id, frozenset(last.durable_partitions()))

    # -- the commit of one batch ---------------------------------------------------------
    def commit_batch(self, batch_id: int, handles: list[TxnHandle], inputs: str | None = None) -> BatchRecord:
        """Commit one batch (steps 1-8); ``inputs``, the engine's description of the batch's input,
        is stored with the decision (a replay without it keeps the one decided before)."""
        started = time.monotonic()
        previous = self.log.get(batch_id)
        if previous is not None and previous.state == COMMITTED:                      # step 1
            self._abort_duplicates(handles, set(range(previous.num_partitions)))
            return previous
        record = self._decide(batch_id, handles, previous, inputs)                   # step 2
        self.hooks.reached(Step.BEFORE_DECISION, batch_id)
        self._check_topics(batch_id, handles)                                        # step 2b
        record = self.log.append(record, previous)                                   # step 3
        self.hooks.reached(Step.AFTER_DECISION, batch_id)
        record = self._end(record)                                                   # steps 4-6
        self.hooks.reached(Step.AFTER_END_TXNS, batch_id)
        self.aborts.add(LINGERING, len(self.aborter.abort_lingering()))             # step 7
        self.log.prune()                                                             # step 8
        self._report(record, started)
        return record

    def abort_batch(self, batch_id: int, handles: list[TxnHandle], sink_partitions: int) -> None:
        """The engine gave up on the batch (a task failed, or ``commit_batch`` raised):
          A. a decision for it is in the sink log: never abort it, finish it (``_finish``);
          B. else abort every id its tasks can have used (any attempt) and the reported handles'
             ids, except a decided batch's pending ones; again after ``SWEEP_DELAY_S``."""
        ids = self.aborter.ids_of_batch(batch_id, sink_partitions) | {
            h.transactional_id for h in handles if h.transactional_id}
        decided = self.log.get(batch_id)
        if decided is not None:                                                      # A
            self._finish(decided)
            self.aborts.add(LINGERING, len(self.aborter.abort_ids(ids, self._pending_ids())))  # losing attempts
            return
        keep = self._pending_ids()
        self.aborts.add(FAILED_BATCH, len(self.aborter.abort_ids(ids, keep)))       # B
        self._sleep(SWEEP_DELAY_S)
        self.aborts.add(FAILED_BATCH, len(self.aborter.abort_ids(ids, keep)))

    def release(self) -> None:
        """The query ended (failed or stopped; none of its tasks runs): finish the last decided
        batch if the brokers allow, then abort every other Ongoing transaction under the prefix."""
        last = self.log.latest()
        if last is not None and last.state == DECIDED and last.partitions_with(PENDING):
            self._finish(last)
        self.aborter.abort_lingering(self._pending_ids())

    def _finish(self, record: BatchRecord) -> None:
        """Commit a decided batch's pending handles (the recovery path), or leave them for the next start."""
        if record.state != DECIDED or not record.partitions_with(PENDING):
            log.warning("kafka-eos: batch %d is %s in the sink log: nothing of it is aborted",
                        record.batch_id, record.state.value)
            return
        try:
            self._end(record)
            log.warning("kafka-eos: batch %d was decided before the engine gave up on it: committed it now",
                        record.batch_id)
        except Exception as exc:  # noqa: BLE001 - the decision stays durable; the next start commits it
            log.warning("kafka-eos: batch %d is decided but could not be committed now (%s); it stays decided "
                        "and the next start commits it", record.batch_id, exc)

    def _pending_ids(self) -> set[str]:
        """The transactional ids of the last decided batch's handles still to be committed."""
        last = self.log.latest()
        if last is None or last.state != DECIDED:
            return set()
        return {h.transactional_id for h in last.handles_with(PENDING) if h.transactional_id}

    def _decide(self, batch_id: int, handles: list[TxnHandle], previous: BatchRecord | None,
                inputs: str | None = None) -> BatchRecord:
        if previous is None:
            status = {h.sink_partition: PENDING for h in handles if h.has_transaction}
            return BatchRecord(batch_id, DECIDED, len(handles), tuple(handles), status, inputs=inputs)
        self._check_replay(batch_id, handles, previous)
        durable = previous.durable_partitions()
        self._abort_duplicates(handles, durable)
        kept = {h.sink_partition: h for h in previous.handles if h.sink_partition in durable}
        merged = tuple(kept.get(h.sink_partition, h) for h in handles)
        status = {**{p: s for p, s in previous.status.items() if p in durable},
                  **{h.sink_partition: PENDING for h in merged
                     if h.sink_partition not in durable and h.has_transaction}}
        return BatchRecord(batch_id, DECIDED, len(handles), merged, status,
                           inputs=previous.inputs if inputs is None else inputs)

    def _check_topics(self, batch_id: int, handles: list[TxnHandle]) -> None:
        try:
            self.topic_check(batch_id, handles)
        except OutputTopicChangedError:
            self.committer.abort([h for h in handles if h.has_transaction])
            raise

    def _check_replay(self, batch_id: int, handles: list[TxnHandle], previous: BatchRecord) -> None:
        """Step 2's check (``replay.replay_mismatch``): a refused replay's transactions are aborted."""
        mismatch = replay_mismatch(batch_id, handles, previous)
        if mismatch is not None:
            self.committer.abort([h for h in handles if h.has_transaction])
            raise mismatch

    def _end(self, record: BatchRecord) -> BatchRecord:
        """Steps 4-6 for the pending handles of a decided batch."""
        pending = record.handles_with(PENDING)
        t0 = time.monotonic()
        self.hooks.reached(Step.COMMITTING, record.batch_id)
        outcomes = self.committer.commit(pending)                                    # step 4
        commit_ms = round((time.monotonic() - t0) * 1000, 1)
        base, record = record, record.with_status({p: EndTxnOutcome(o).partition_state() for p, o in outcomes.items()})
        lost = record.partitions_with(LOST)
        if lost:                                                                     # step 5
            self.log.append(record, base)
            records = sum(h.records for h in record.handles if h.sink_partition in lost)
            raise TransactionLostError.of_batch(record.batch_id, sorted(lost), records, self.transaction_timeout_ms)
        metrics = {"records": float(sum(h.records for h in record.handles)),
                   "transactions": float(len(pending)), "commit_ms": commit_ms,
                   "precommit_max_ms": max((h.precommit_ms for h in record.handles), default=0.0),
                   "committed_at_ms": float(int(time.time() * 1000)),  # where ``verify`` starts reading
                   **self.aborts.metrics()}
        record = BatchRecord(record.batch_id, COMMITTED, record.num_partitions, record.handles,
                             record.status, metrics, inputs=record.inputs)
        record = self.log.append(record, base)                                       # step 6
        self.aborts.clear()
        return record

    def _abort_duplicates(self, handles: list[TxnHandle], durable: set[int]) -> None:
        duplicates = [h for h in handles if h.sink_partition in durable and h.has_transaction]
        if duplicates:
            log.warning("kafka-eos: aborting %d re-written transaction(s) of already durable partitions",
                        len(duplicates))
            outcomes = self.committer.abort(duplicates)
            self.aborts.add(REPLAY_DUPLICATE, sum(o is EndTxnOutcome.ABORTED for o in outcomes.values()))

    def _report(self, record: BatchRecord, started: float) -> None:
        m = record.metrics
        log.info("kafka-eos batch %d: %d records, %d transactions committed, pre-commit max %.0f ms, "
                 "commit %.0f ms (decision to committed %.0f ms)", record.batch_id, m["records"],
                 m["transactions"], m["precommit_max_ms"], m["commit_ms"], (time.monotonic() - started) * 1000)
