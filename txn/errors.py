"""Named exceptions for broken invariants of the commit protocol."""
from __future__ import annotations


class TwoPhaseCommitError(RuntimeError):
    """Base class: something the exactly-once protocol cannot continue past."""


class SinkConfigError(TwoPhaseCommitError, ValueError):
    """A sink setting is missing or unsafe; the message names the setting and the fix."""


class TransactionLostError(TwoPhaseCommitError):
    """A decided transaction can no longer be committed (the broker aborted it, e.g. on
    ``transaction.timeout.ms``). Its data is NOT in the output: the batch must be replayed,
    which a restart from the checkpoint does (the lost sink partitions are re-written)."""


class ReplayMismatchError(TwoPhaseCommitError):
    """A replayed batch does not have the shape of the decided one (a different number of
    sink partitions), so the lost partitions cannot be re-written exactly once."""


class ProducerFencedError(TwoPhaseCommitError):
    """Another writer (a newer query with the same transactional-id prefix, or a newer task
    attempt) took over the transactional id."""


class SinkLogError(TwoPhaseCommitError):
    """The sink log is unreadable, of an unknown format version, or belongs to another prefix."""
