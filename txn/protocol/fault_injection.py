"""Fault injection for tests: wrappers that pause a run at a ``FaultPlan``'s points.

``TwoPhaseCommitProtocol.from_config`` builds them only when a plan is set; production code
never consults a plan. Points and their wrappers:
- ``before_decision``, ``after_decision``, ``after_end_txns``: ``FaultInjectingHooks``, told by
  the protocol when it reaches those steps of ``commit_batch``;
- ``between_end_txns``: ``FaultInjectingCommitter``: of a batch the plan aims at with more than
  one pending handle, the first is committed alone, then the point fires, then all are committed
  (a retried commit of a committed handle succeeds);
- ``task_start``, ``task_write``: ``task_input`` wraps an executor task's input rows.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, TypeVar

from kafka_eos.txn.protocol.faults import FaultPlan, paused
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.steps import Step, StepHooks

if TYPE_CHECKING:  # a task's input wrapper needs no committer (nor its kafka-python)
    from kafka_eos.txn.protocol.kafka_committer import KafkaCommitter, Outcomes

T = TypeVar("T")
BETWEEN_END_TXNS = "between_end_txns"
_POINTS = (Step.BEFORE_DECISION, Step.AFTER_DECISION, Step.AFTER_END_TXNS)


class FaultInjectingHooks(StepHooks):
    def __init__(self, plan: FaultPlan, inner: StepHooks | None = None) -> None:
        self.plan, self.inner = plan, inner or StepHooks()
        self.committing: int | None = None  # the batch whose handles the protocol commits now

    def reached(self, step: Step, batch_id: int) -> None:
        self.inner.reached(step, batch_id)
        if step is Step.COMMITTING:
            self.committing = batch_id
        elif step in _POINTS:
            self.plan.hit(step.value, batch_id)


class FaultInjectingCommitter:
    """A committer that pauses between the EndTxns of one batch (see the module docstring)."""

    def __init__(self, inner: KafkaCommitter, hooks: FaultInjectingHooks) -> None:
        self.inner, self.hooks = inner, hooks

    def commit(self, handles: Iterable[TxnHandle]) -> Outcomes:
        handles, batch_id = list(handles), self.hooks.committing
        if batch_id is not None and len(handles) > 1 and self.hooks.plan.aims_at(BETWEEN_END_TXNS, batch_id):
            self.inner.commit(handles[:1])
            self.hooks.plan.hit(BETWEEN_END_TXNS, batch_id)
        return self.inner.commit(handles)

    def abort(self, handles: Iterable[TxnHandle]) -> Outcomes:
        return self.inner.abort(handles)


def _unchanged(rows: Iterator[T], batch_id: int) -> Iterator[T]:
    return rows


def task_input(plan: FaultPlan) -> Callable[[Iterator[T], int], Iterator[T]]:
    """What a write task reads its rows through (picklable): unchanged without a plan, else
    paused at ``task_start`` (first rows read, before the writer opens its transaction) and
    ``task_write`` (the first rows are written and the next are asked for)."""
    if not plan.active:
        return _unchanged
    return partial(_paused_task, plan)


def _paused_task(plan: FaultPlan, rows: Iterator[T], batch_id: int) -> Iterator[T]:
    return paused(rows, plan, batch_id, on_first="task_start", after_first="task_write")
