"""The states of the commit protocol, one vocabulary per thing they describe, and their transitions.

- ``BatchState``: a batch record in the sink log is ``DECIDED`` or ``COMMITTED``;
- ``PartitionState``: a sink partition of a decided batch is ``PENDING``, ``COMMITTED`` or ``LOST``;
- ``EndTxnOutcome``: EndTxn answers ``COMMITTED`` or ``LOST`` for a commit, ``ABORTED`` for an abort.

Enforced here: a record moves only along the allowed transitions (``check_batch_transition``,
``check_partition_transitions``, raising ``StateTransitionError`` naming the batch and both states):
    batch:      (none) -> decided -> decided (partitions lost, or a replay re-decides) -> committed
                (with no pending sink partition left);
    partition:  (none) -> pending -> committed | lost;  lost -> pending (a replay re-writes it);
                pending | lost -> (none) (a replay's re-write had no transaction); committed is final.
A state stays allowed to itself. ``BatchState``/``PartitionState`` values are the sink log's JSON
strings (a member is a ``str`` equal to its value), so records persist byte-for-byte as the plain
strings of sink log format 2; ``EndTxnOutcome`` is never persisted: ``partition_state`` maps a
commit's answer onto a partition state.
"""
from __future__ import annotations

from enum import Enum
from typing import Mapping

from kafka_eos.txn.protocol.errors import TwoPhaseCommitError


class _Named(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class BatchState(_Named):
    DECIDED = "decided"
    COMMITTED = "committed"


class PartitionState(_Named):
    PENDING = "pending"
    COMMITTED = "committed"
    LOST = "lost"


class EndTxnOutcome(_Named):
    COMMITTED = "committed"
    LOST = "lost"
    ABORTED = "aborted"

    def partition_state(self) -> PartitionState:
        """What a commit's answer makes of a pending sink partition (an abort's is no partition state)."""
        if self is EndTxnOutcome.ABORTED:
            raise ValueError("an aborted transaction is no state of a decided sink partition")
        return PartitionState(self.value)


class StateTransitionError(TwoPhaseCommitError):
    """A sink log record would move a batch or a sink partition along a transition the protocol
    does not have (a bug, or a log edited by hand): nothing is written."""


_BATCH: dict[BatchState | None, frozenset[BatchState]] = {
    None: frozenset({BatchState.DECIDED}),
    BatchState.DECIDED: frozenset({BatchState.DECIDED, BatchState.COMMITTED}),
    BatchState.COMMITTED: frozenset({BatchState.COMMITTED}),
}
_P = PartitionState
_PARTITION: dict[PartitionState | None, frozenset[PartitionState | None]] = {
    None: frozenset({None, _P.PENDING}),
    _P.PENDING: frozenset({_P.PENDING, _P.COMMITTED, _P.LOST, None}),
    _P.LOST: frozenset({_P.LOST, _P.PENDING, None}),
    _P.COMMITTED: frozenset({_P.COMMITTED}),
}


def _name(state: _Named | None) -> str:
    return "(none)" if state is None else state.value


def check_batch_transition(batch_id: int, before: BatchState | None, after: BatchState,
                           status: Mapping[int, PartitionState] | None = None) -> None:
    """Raise ``StateTransitionError`` unless batch ``batch_id`` may go from ``before`` (None: no record
    yet) to ``after``; a committed batch (``status``: its partitions) has no pending sink partition."""
    pending = sorted(p for p, s in (status or {}).items() if s is PartitionState.PENDING)
    if after is BatchState.COMMITTED and pending:
        raise StateTransitionError(
            f"batch {batch_id}: the sink log cannot go from {_name(before)} to committed while sink partitions "
            f"{pending} are pending; nothing was written. A batch is committed once every pending transaction is "
            "committed (or its loss accepted).")
    if after not in _BATCH[before]:
        raise StateTransitionError(
            f"batch {batch_id}: the sink log cannot go from {_name(before)} to {_name(after)} (allowed from "
            f"{_name(before)}: {', '.join(sorted(s.value for s in _BATCH[before])) or 'nothing'}); nothing was "
            "written. A committed batch is final; a batch is decided before it is committed.")


def check_partition_transitions(batch_id: int, before: Mapping[int, PartitionState],
                                after: Mapping[int, PartitionState]) -> None:
    """Raise ``StateTransitionError`` naming the first sink partition of batch ``batch_id`` whose state
    may not go from ``before`` to ``after`` (a partition absent from a map has no state)."""
    for partition in sorted(set(before) | set(after)):
        old, new = before.get(partition), after.get(partition)
        if new not in _PARTITION[old]:
            raise StateTransitionError(
                f"batch {batch_id}, sink partition {partition}: the sink log cannot go from {_name(old)} to "
                f"{_name(new)}; nothing was written. A committed sink partition is final; only a pending one "
                "is committed or lost, and only a lost one is re-written (pending again).")
