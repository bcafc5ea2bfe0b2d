"""TransactionalIdFactory: the bounded pool of transactional ids of one sink.

Invariants:
- id = ``<prefix>-<sink partition>-<slot>`` with ``slot = batch_id % slots``; the set of ids a
  query ever uses is bounded by (sink partitions x slots), whatever the number of batches.
- Ownership: the id belongs to whichever task attempt of (batch, sink partition) called
  ``init_transactions`` last; that call fences every older attempt (retries, speculative copies,
  a previous run of the query) and aborts its open transaction.
- With two slots, batch N and N+1 never share an id, so a straggling attempt of batch N cannot
  fence a transaction of batch N+1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_SLOTS = 2
_PREFIX = re.compile(r"^[A-Za-z0-9._\-]{1,200}$")


@dataclass(frozen=True)
class TransactionalIdFactory:
    prefix: str
    slots: int = DEFAULT_SLOTS

    def __post_init__(self) -> None:
        if not _PREFIX.match(self.prefix or ""):
            from txn.errors import SinkConfigError
            raise SinkConfigError(
                f"transactional.id.prefix {self.prefix!r} is invalid: use 1-200 characters of "
                "letters, digits, '.', '_' or '-', unique per query (e.g. 'orders-enricher')")
        if self.slots < 1:
            raise ValueError("slots must be >= 1")

    def id_for(self, sink_partition: int, batch_id: int) -> str:
        return f"{self.prefix}-{sink_partition}-{batch_id % self.slots}"

    def owns(self, transactional_id: str) -> bool:
        return self.pattern().match(transactional_id) is not None

    def pattern(self) -> re.Pattern:
        return re.compile(rf"^{re.escape(self.prefix)}-\d+-\d+$")
