"""KafkaWriter: one task's rows in one Kafka transaction, pre-committed (Flink's KafkaWriter).

Steps for task attempt a of (batch N, sink partition k):
  1. nothing to write          -> no producer, no transaction, empty handle;
  2. guard: if a decision newer than the one this batch was planned after is in the sink log,
     batch N is decided without us: write nothing (``StaleAttemptError``);
  3. init_transactions on id(k, N, a) -> fences older users of that id and aborts their txn
     (at-least-once: no transaction; ``producer_stats.await_producer_id`` instead);
     attempts of one task have distinct ids (``TransactionalIdFactory``), so they never fence
     each other; the driver commits the handle of the attempt that finished first;
  4. begin, produce every row (exactly-once: each row's partition chosen and its Arrow batch grouped
     by partition first, ``write_evidence``; a ``timestamp`` column, or a copy's source timestamps, the
     records' CreateTime, ``record_times``); ``_precommit``: ``_flush`` until the leaders acknowledged every
     record, in short steps that stop at a failed delivery or transaction (``flush.flush_checked``),
     within ``flush.client_wait_s`` (the one wait of init_transactions and flush);
  5. guard again: decided meanwhile -> abort our own transaction (nothing open holds back
     read_committed readers) and raise ``StaleAttemptError``;
  6. ``_next_stats``: librdkafka's first statistics after the flush (at most ``STATS_WAIT_S``);
     ``_handle``: records per partition, producer id + epoch (``eos`` object), the evidence's
     digests (kept only if its counts are librdkafka's) -> the handle;
  7. drop the producer WITHOUT aborting: the transaction stays Ongoing until the driver ends it.
A failure anywhere after the producer opened (a delivery error, a failed transaction, ``produce``
or the input rows raising, e.g. an upstream UDF) stops the task at once: it purges its queue and
aborts its own transaction (bounded by ``flush.ABORT_WAIT_S``, best effort) before the error
propagates, a ``KafkaWriteError`` naming topic[partition], the key and the fix for a failed
record. What it could not abort, the driver's sweep of the batch's ids ends. The task's retry
writes under the next attempt's id.

Remaining window (stated honestly): the guard is a check, not a lock. A straggler of batch N
that passes step 2 and is then paused (GC, SIGSTOP) until batch N+2 has pre-committed on the
same id can still fence N+2's transaction in step 3: the driver then finds it lost
(``TransactionLostError``), the query stops and the restart re-writes those partitions (no loss,
no duplicate, but a stop). Between step 5 and step 7 a straggler's transaction can stay open
until the driver's lingering cleanup after the next batch, or ``transaction.timeout.ms``.
More slots would only move the fenced batch from N+2 to N+slots; the window is the time between
the guard's read and ``init_transactions``, so the default stays at two slots.
The guard needs executors to read the sink log (as Spark's state store reads the checkpoint);
a failed read fails the task, which Spark retries.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterable

from confluent_kafka import KafkaException, Producer

from kafka_eos import client_factory
from kafka_eos.client_factory import ProducerFactory

from kafka_eos import KafkaEosError
from kafka_eos.txn.writer.failed_records import FailedRecords
from kafka_eos.txn.writer.flush import (FAILED_TXN_STATES, TransactionFailed, abort_own, client_wait_s,
                                        flush_checked, produce_refused, txn_state)
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.writer.records import Records
from kafka_eos.txn.writer.row_columns import Rows, row_columns, row_partitions, row_topics
from kafka_eos.txn.writer.record_times import TimestampError, earliest, now_ms, stamped, timestamps_of
from kafka_eos.txn.writer.producer_stats import (STATS_INTERVAL_MS, LatestStats, await_producer_id, next_stats,
                                          records_per_partition)
from kafka_eos.txn.protocol.sink_config import SinkConfig

if TYPE_CHECKING:
    from kafka_eos.txn.writer.write_evidence import TaskEvidence

log = logging.getLogger(__name__)
STATS_WAIT_S = 10.0  # pre-commit waits this long at most for statistics newer than the flush
CAUSE_WAIT_S = 2.0   # purged records seen: how long their cause's own delivery report is awaited


class KafkaWriteError(KafkaEosError, RuntimeError):
    """A record could not be written; the message names it and the fix."""


class StaleAttemptError(KafkaWriteError):
    """This task attempt's batch was decided without it (a zombie or straggling attempt); it
    wrote nothing that stays open. Spark ignores the failure of a task whose job is done."""


def _never() -> bool:
    return False


class KafkaWriter:
    def __init__(self, config: SinkConfig, batch_id: int, sink_partition: int, attempt: int = 0,
                 decided: Callable[[], bool] = _never, new_producer: ProducerFactory = client_factory.producer) -> None:
        self.config, self.batch_id, self.sink_partition = config, batch_id, sink_partition
        self._new_producer = new_producer
        self.transactional_id = config.ids.id_for(sink_partition, batch_id, attempt)
        self._decided = decided
        self._client_wait_s = client_wait_s(config.transaction_timeout_ms)  # init_transactions, flush
        self._producer: Producer | None = None
        self._stats = LatestStats()
        self._failures = FailedRecords()  # librdkafka's delivery and error reports
        self._records = 0
        self._evidence: "TaskEvidence | None" = None  # created with the producer (its partitioner)
        self._earliest_ms: int | None = None  # the smallest record timestamp this task chose

    def write(self, batches: Iterable[Rows]) -> TxnHandle:
        try:
            for batch in batches:
                if batch.num_rows:
                    self._produce_batch(batch)
            if self._producer is None:
                return TxnHandle.empty(self.sink_partition)
            return self._precommit(self._producer)
        except BaseException as exc:
            reason = self._failure() if self._producer is not None else None
            self._abandon()
            if reason and not isinstance(exc, KafkaWriteError):
                raise self._failed(reason) from exc
            raise

    def _abandon(self) -> None:
        """Purge and abort this task's own transaction (bounded, best effort); drop the producer."""
        producer, self._producer = self._producer, None
        if producer is None:
            return
        not_ended = abort_own(producer, self.config.exactly_once)
        if not_ended:
            log.warning("kafka-eos: %s: the failed task could not abort its transaction (%s); the driver's "
                        "sweep ends it, or the broker at transaction.timeout.ms", self.transactional_id, not_ended)

    def _failure(self) -> str | None:
        """Why this task's transaction failed (delivery or fatal errors, its state), or None. Purged
        records alone are not the cause: their failure's own report is awaited (``CAUSE_WAIT_S``)."""
        if self._failures.only_purged() and self._producer is not None:
            self._await_cause(self._producer)
        if not self._failures.errors and self._producer is not None and self.config.exactly_once:
            state = txn_state(self._stats.latest)
            if state in FAILED_TXN_STATES:
                self._producer.poll(0.2)  # serve the failed records' delivery reports
                return self._failures.first() or f"the producer's transaction is {state}"
        return self._failures.first() or None

    def _await_cause(self, producer: Producer) -> None:
        deadline = time.monotonic() + CAUSE_WAIT_S
        while not self._failures.errors and time.monotonic() < deadline:
            producer.poll(0.1)

    def _failed(self, reason: str) -> KafkaWriteError:
        return KafkaWriteError(f"{self.transactional_id} (batch {self.batch_id}): {reason}. The task stopped and "
                               "aborted its transaction; once fixed, a restart resumes exactly once")

    def _refused(self, exc: KafkaException, refused: str) -> KafkaWriteError:
        """produce() refused a record. In a failed transaction (``_STATE``) the cause is an earlier
        record whose delivery report may not be served yet: awaited (``CAUSE_WAIT_S``) and named first."""
        error = exc.args[0] if exc.args else None
        if self._producer is not None and getattr(error, "name", lambda: "")() == "_STATE":
            self._await_cause(self._producer)
        return self._failed(self._failures.first()) if self._failures.errors else KafkaWriteError(refused)

    def _raise_if_failed(self) -> None:
        reason = self._failure()
        if reason:
            raise self._failed(reason)

    # -- steps 2-4 -----------------------------------------------------------------------
    def _open(self, topic: str | None) -> Producer:
        settings = self.config.producer_settings(self.transactional_id)
        # Only failed deliveries are reported (per-record callbacks cost a quarter of the
        # write time); per-partition counts come from the statistics at pre-commit.
        settings.update({"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": self._stats,
                         "on_delivery": self._failures.delivered,
                         "delivery.report.only.error": True, "error_cb": self._failures.error})
        self._check_not_decided("before init_transactions")
        producer = self._new_producer(settings)
        if self.config.exactly_once:  # evidence only here: at-least-once has no transaction to attribute records to
            self._evidence = self._new_evidence(settings, producer) if self.config.write_evidence else None
            producer.init_transactions(self._client_wait_s)
            producer.begin_transaction()
        else:  # without this, librdkafka's 500 ms PID timer holds every record back (producer_stats)
            await_producer_id(producer, self._stats, topic)
        return producer

    def _produce_batch(self, batch: Rows) -> None:
        if not isinstance(batch, Records) and "value" not in batch.schema.names:  # before the producer opens
            raise KafkaWriteError("the sink needs a 'value' column (string or binary); "
                                  f"got columns {batch.schema.names}: select or alias one as 'value'")
        batch = self._stamped(batch)
        topics, partitions = row_topics(batch, self.config.topic), row_partitions(batch)
        placed = partitions or [-1] * batch.num_rows
        if self._producer is None:
            self._producer = self._open(topics[0])
        if self._evidence is not None:  # the rows may come back grouped by partition (write_evidence)
            batch, topics, placed = self._evidence.place(batch, topics, partitions)
        keys, values, headers = self._columns(batch)
        times = timestamps_of(batch)
        self._earliest_ms = earliest(times, self._earliest_ms)
        produce, poll = self._producer.produce, self._producer.poll
        for row in range(batch.num_rows):  # the hot loop: one produce per row, nothing else
            topic = topics[row]
            if topic is None:
                raise KafkaWriteError(
                    f"row {row} of batch {self.batch_id} (key={keys[row]!r:.60}) has no topic: set the sink "
                    "option 'topic' or give every row a non-null 'topic' column")
            extra: dict[str, Any] = {"headers": headers[row]} if headers and headers[row] else {}
            if times is not None:  # headers and timestamp by keyword: positional order varies by release
                extra["timestamp"] = times[row]
            while True:
                try:
                    produce(topic, values[row], keys[row], placed[row], **extra)
                    break
                except BufferError:  # the queue drains, unless the transaction failed
                    poll(0.05)
                    self._raise_if_failed()
                except KafkaException as exc:  # e.g. a partition the topic does not have
                    raise self._refused(exc, produce_refused(exc, topic, placed[row], keys[row], values[row])) from exc
        self._records += batch.num_rows
        poll(0)
        self._raise_if_failed()

    def _stamped(self, batch: Rows) -> Rows:
        """The rows' record timestamps as epoch ms (``record_times``), a missing one this task's clock;
        a copy's without ``copy_timestamps``: none (librdkafka stamps them)."""
        if isinstance(batch, Records) and batch.timestamps is not None and not self.config.copy_timestamps:
            return replace(batch, timestamps=None)
        try:
            return stamped(batch, now_ms())
        except TimestampError as exc:
            raise KafkaWriteError(f"batch {self.batch_id}: {exc}") from None

    @staticmethod
    def _new_evidence(settings: dict, producer: Any) -> "TaskEvidence":
        from kafka_eos.txn.writer.write_evidence import TaskEvidence, partition_counts  # Arrow: tasks only
        return TaskEvidence(settings.get("partitioner", ""), partition_counts(producer))

    def _columns(self, batch: Rows) -> tuple[list, list, list | None]:
        return row_columns(batch)  # a method: bench/profile_hooks times it

    def _check_not_decided(self, when: str) -> None:
        if self._decided():
            raise StaleAttemptError(
                f"{self.transactional_id}: batch {self.batch_id} was decided without this task attempt "
                f"(found {when}); it writes nothing. A zombie or straggling attempt, nothing to fix.")

    # -- pre-commit: steps 4 (end) to 7 -------------------------------------------------
    def _precommit(self, producer: Producer) -> TxnHandle:
        started = time.monotonic()
        self._flush(producer)                                                         # step 4
        self._abort_if_decided()                                                      # step 5
        stats = self._next_stats(producer)
        handle = self._handle(stats, round((time.monotonic() - started) * 1000, 1))   # step 6
        self._producer = None  # step 7: dropped without abort; the transaction stays Ongoing
        return handle

    def _flush(self, producer: Producer) -> None:
        """Every record acknowledged, else ``KafkaWriteError``: the first failed records (delivery
        errors, a failed transaction) as soon as seen, or what is still unacknowledged at the deadline."""
        try:
            remaining = flush_checked(producer.flush, self._failure, self._client_wait_s)
        except TransactionFailed as failed:
            raise self._failed(str(failed)) from None
        if remaining:
            raise self._failed(f"{remaining} records unacknowledged after {self._client_wait_s:.0f} s")

    def _abort_if_decided(self) -> None:
        """Decided meanwhile: abort this attempt's own transaction, then ``StaleAttemptError``."""
        if self.config.exactly_once and self._decided():
            self._abandon()
            self._check_not_decided("after flush (its transaction is aborted)")

    def _next_stats(self, producer: Producer) -> dict:
        """The first librdkafka statistics emitted after the flush (within ``STATS_WAIT_S``), parsed."""
        latest = next_stats(producer, self._stats, STATS_WAIT_S)
        return json.loads(latest) if latest else {}

    def _handle(self, stats: dict, precommit_ms: float) -> TxnHandle:
        """The handle: records per partition; with transactions, the producer id and epoch of the
        Ongoing transaction (``KafkaException`` if librdkafka gives none, ``KafkaWriteError`` if the
        transaction is no longer open)."""
        partitions = records_per_partition(stats)
        if not self.config.exactly_once:  # at-least-once: flushed is final, nothing to commit
            return TxnHandle(sink_partition=self.sink_partition, records=self._records, partitions=partitions,
                             precommit_ms=precommit_ms)
        eos = stats.get("eos", {})
        if eos.get("producer_id", -1) < 0:
            raise KafkaException(f"{self.transactional_id}: librdkafka statistics gave no producer id/epoch")
        if eos.get("txn_state") not in ("InTransaction", "BeginCommit"):
            raise KafkaWriteError(f"{self.transactional_id}: transaction is {eos.get('txn_state')} after flush "
                                  "(a record failed); the task fails and its retry fences this attempt")
        digests = self._evidence.checked_digests(partitions, self.transactional_id) if self._evidence else {}
        times = self._evidence.timestamp_digests() if self._evidence and digests else {}
        from kafka_eos.txn.writer.record_digest import DIGEST_FORMAT, TIMESTAMP_FORMAT
        return TxnHandle(sink_partition=self.sink_partition, transactional_id=self.transactional_id,
                         producer_id=eos["producer_id"], producer_epoch=eos["producer_epoch"],
                         records=self._records, partitions=partitions, precommit_ms=precommit_ms,
                         digests=digests, digest_format=DIGEST_FORMAT if digests else "",
                         timestamp_digests=times, timestamp_format=TIMESTAMP_FORMAT if times else "",
                         earliest_timestamp_ms=self._earliest_ms)

