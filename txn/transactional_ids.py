"""TransactionalIdFactory: the bounded pool of transactional ids of one sink.

Invariants enforced here:
- id = ``<prefix>-<sink partition>-<slot>`` (always ``<prefix>-<int>-<int>``: the aborter lists
  ids by that pattern) with ``slot = batch_id % slots + slots * min(attempt, ATTEMPT_IDS - 1)``;
  attempt 0 keeps the ids of earlier releases. The set of ids a query ever uses is bounded by
  sink partitions x slots x ATTEMPT_IDS, whatever the number of batches or attempts.
- Two attempts of one task (a retry after a lost executor whose Python worker lives on, a
  zombie) get different ids, so the later one does not fence the earlier; the driver commits the
  handle of the attempt that finished first and the loser's open transaction is aborted by the
  lingering cleanup after the batch commits. Attempts >= ATTEMPT_IDS - 1 share the last id (the
  later fences the earlier: that attempt then fails, and Spark retries or stops the query).
- With two slots, batch N and N+1 never share an id. Batch N and N+2 do: a straggler of batch N
  must not call ``init_transactions`` once batch N is decided (``KafkaWriter``'s guard).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_SLOTS = 2
ATTEMPT_IDS = 4  # distinct ids per (sink partition, slot); Spark's spark.task.maxFailures is 4
_PREFIX = re.compile(r"^[A-Za-z0-9._\-]{1,200}$")


@dataclass(frozen=True)
class TransactionalIdFactory:
    prefix: str
    slots: int = DEFAULT_SLOTS

    def __post_init__(self) -> None:
        if not _PREFIX.match(self.prefix or ""):
            from kafka_eos.txn.errors import SinkConfigError
            raise SinkConfigError(
                f"transactional.id.prefix {self.prefix!r} is invalid: use 1-200 characters of "
                "letters, digits, '.', '_' or '-', unique per query (e.g. 'orders-enricher')")
        if self.slots < 1:
            raise ValueError("slots must be >= 1")

    def slot(self, batch_id: int, attempt: int = 0) -> int:
        if attempt < 0:
            raise ValueError(f"task attempt number {attempt} is negative")
        return batch_id % self.slots + self.slots * min(attempt, ATTEMPT_IDS - 1)

    def id_for(self, sink_partition: int, batch_id: int, attempt: int = 0) -> str:
        return f"{self.prefix}-{sink_partition}-{self.slot(batch_id, attempt)}"

    def describe(self) -> str:
        """Every id this factory can hand out, as ``<prefix>-<sink partition>-<0..n>``."""
        return f"{self.prefix}-<sink partition>-<0..{self.slots * ATTEMPT_IDS - 1}>"

    def owns(self, transactional_id: str) -> bool:
        return self.pattern().match(transactional_id) is not None

    def pattern(self) -> re.Pattern:
        return re.compile(rf"^{re.escape(self.prefix)}-\d+-\d+$")
