"""Named exceptions for broken invariants of the commit protocol."""
from __future__ import annotations

from kafka_eos import KafkaEosError


class TwoPhaseCommitError(KafkaEosError, RuntimeError):
    """Base class: something the exactly-once protocol cannot continue past."""


class SinkConfigError(TwoPhaseCommitError, ValueError):
    """A sink setting is missing or unsafe; the message names the setting and the fix."""


class TransactionLostError(TwoPhaseCommitError):
    """A decided transaction can no longer be committed (the broker aborted it, e.g. on
    ``transaction.timeout.ms``). Its data is NOT in the output: the batch must be replayed,
    which a restart from the checkpoint does (the lost sink partitions are re-written)."""

    @classmethod
    def of_batch(cls, batch_id: int, lost: list[int], records: int, transaction_timeout_ms: int
                 ) -> "TransactionLostError":
        return cls(
            f"batch {batch_id}: the broker aborted the transactions of sink partitions "
            f"{lost} ({records} records) before they were committed: transaction.timeout.ms "
            f"({transaction_timeout_ms} ms) elapsed, the ids expired, or another writer of the "
            "ids fenced them (a straggling task attempt, a second run of the query). Nothing is lost for "
            "good: restart the query from its checkpoint; it replays this batch and re-writes exactly "
            "those partitions. If the timeout elapsed, raise transaction.timeout.ms (within the broker's "
            "transaction.max.timeout.ms).")


class ReplayMismatchError(TwoPhaseCommitError):
    """A replayed batch does not have the rows of the decided one (another number of sink
    partitions, or another record count in a sink partition), so its lost partitions cannot be
    re-written exactly once; the replay's transactions are aborted, nothing is committed."""

    @classmethod
    def of_batch(cls, batch_id: int, rewrite: list[int], rewrite_records: int, replay_partitions: int,
                 decided_partitions: int, counts: str) -> "ReplayMismatchError":
        return cls(
            f"batch {batch_id} cannot be re-written exactly once: sink partitions {rewrite} of its decision "
            f"({rewrite_records} records) were lost and must be re-written, but "
            f"the replay of the same offsets does not give the decided rows - it has {replay_partitions} sink "
            f"partitions (decided: {decided_partitions}) and other record counts ({counts}). Likely cause: "
            "a non-deterministic plan before the sink (rand()/uuid() deciding which rows are kept or where they "
            "go, coalesce after a shuffle, a round-robin repartition(n) with "
            "spark.sql.execution.sortBeforeRepartition=false, a stream-static join on a table that changed). "
            "Nothing of this replay was committed (its transactions are aborted). Ways on: (1) make the plan "
            "reproduce the decided rows (e.g. repartition(n, <key columns>)) and restart from the checkpoint; "
            f"or (2) accept the loss of those {rewrite_records} records, once: stop the query and run "
            f"`kafka-eos accept-loss --batch {batch_id} <pipeline.yaml>` (code users: "
            f"`kafka-eos accept-loss --batch {batch_id} --sink-log <checkpointLocation>/kafka-eos-sink`), then "
            "restart: the replay of this batch commits nothing more (no duplicate) and the query goes on; the "
            f"lost records' source offsets are in the checkpoint's offsets/{batch_id}, to be re-sent by hand "
            "if they are needed.")


class ProducerFencedError(TwoPhaseCommitError):
    """Another writer (a newer query with the same transactional-id prefix, or a newer task
    attempt) took over the transactional id."""


class SinkLogError(TwoPhaseCommitError):
    """The sink log is unreadable, of an unknown format version, or belongs to another prefix."""


class SinkLogConflictError(SinkLogError):
    """A create-only sink log record already exists: another run of the query (same checkpoint
    and sink log) wrote that state meanwhile and took over; this run must not proceed."""

    @classmethod
    def of_record(cls, where: str, batch_id: int) -> "SinkLogConflictError":
        return cls(f"{where} already exists: another run of this query (same checkpoint "
                   f"and sink log) wrote batch {batch_id} meanwhile and took over. This run stops "
                   "without touching it; run one query per checkpoint at a time.")
