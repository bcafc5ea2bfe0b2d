"""DecisionGuard: has batch N been decided without this task attempt? (``KafkaWriter``'s steps 2 and 5).

Enforced here: the answer is read from the sink log, read-only (``SinkLogReader`` creates
nothing); True once the log holds a decision newer than the one the driver saw when it planned
the batch. A failed read raises: the task fails and Spark retries it.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_eos.txn.log.sink_log import SinkLogReader


@dataclass(frozen=True)
class DecisionGuard:
    """True once the sink log holds a decision newer than ``planned_after`` (the newest batch id
    in the log when the driver planned this batch; None: the log was empty). Read-only."""
    log_location: str
    planned_after: int | None

    def __call__(self) -> bool:
        latest = SinkLogReader(self.log_location).latest_batch_id()
        return latest is not None and latest > (-1 if self.planned_after is None else self.planned_after)
