"""The moments of the commit protocol it reports to its ``StepHooks`` (by default: to nobody).

``BEFORE_DECISION``, ``AFTER_DECISION`` and ``AFTER_END_TXNS`` are reported by ``commit_batch``
around step 3 and after steps 4-6; ``COMMITTING`` before every step 4 (of a commit or of a
recovery), with the batch whose pending handles are about to be committed. A hook only observes:
it receives no record and its return value is ignored.
"""
from __future__ import annotations

from enum import Enum


class Step(str, Enum):
    BEFORE_DECISION = "before_decision"
    AFTER_DECISION = "after_decision"
    COMMITTING = "committing"
    AFTER_END_TXNS = "after_end_txns"


class StepHooks:
    """Told each step the protocol reaches; does nothing (the fault injection of tests overrides it)."""

    def reached(self, step: Step, batch_id: int) -> None:
        pass
