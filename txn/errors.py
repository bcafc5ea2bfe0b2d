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


class ReplayMismatchError(TwoPhaseCommitError):
    """A replayed batch does not have the rows of the decided one (another number of sink
    partitions, or another record count in a sink partition), so its lost partitions cannot be
    re-written exactly once; the replay's transactions are aborted, nothing is committed."""


class ProducerFencedError(TwoPhaseCommitError):
    """Another writer (a newer query with the same transactional-id prefix, or a newer task
    attempt) took over the transactional id."""


class SinkLogError(TwoPhaseCommitError):
    """The sink log is unreadable, of an unknown format version, or belongs to another prefix."""


class SinkLogConflictError(SinkLogError):
    """A create-only sink log record already exists: another run of the query (same checkpoint
    and sink log) wrote that state meanwhile and took over; this run must not proceed."""
