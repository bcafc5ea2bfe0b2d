"""TransactionalIdFactory: the bounded pool of transactional ids of one sink.

Invariants enforced here:
- id = ``<prefix>-<owner>-<sink partition>-<slot>`` where ``owner`` is ``owner_of(<checkpoint
  identity>)`` (8 hex digits), so two pipelines given one prefix never share an id; a factory
  without owner (checkpoints started before owners existed: the legacy scheme) hands out
  ``<prefix>-<sink partition>-<slot>``. ``pattern()``/``owns()`` match only this factory's
  scheme and owner: a legacy pattern (two numbers after the prefix) never matches an owner's id
  (a word and two numbers), nor one owner's pattern another owner's ids; the aborter lists by
  ``pattern()`` and filters by ``owns()``, so it touches only its own owner's transactions.
  ``prefix_wide()`` matches every id under the prefix, whatever the owner (read-only listings).
- ``slot = batch_id % slots + slots * min(attempt, ATTEMPT_IDS - 1)``; attempt 0 keeps the ids of
  earlier releases. The set of ids a query ever uses is bounded by sink partitions x slots x
  ATTEMPT_IDS, whatever the number of batches or attempts.
- Two attempts of one task (a retry after a lost executor whose Python worker lives on, a
  zombie) get different ids, so the later one does not fence the earlier; the driver commits the
  handle of the attempt that finished first and the loser's open transaction is aborted by the
  lingering cleanup after the batch commits. Attempts >= ATTEMPT_IDS - 1 share the last id (the
  later fences the earlier: that attempt then fails, and Spark retries or stops the query).
- With two slots, batch N and N+1 never share an id. Batch N and N+2 do: a straggler of batch N
  must not call ``init_transactions`` once batch N is decided (``KafkaWriter``'s guard).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

DEFAULT_SLOTS = 2
ATTEMPT_IDS = 4  # distinct ids per (sink partition, slot); Spark's spark.task.maxFailures is 4
OWNER_HEX = 8
_PREFIX = re.compile(r"^[A-Za-z0-9._\-]{1,200}$")
_OWNER = re.compile(rf"^[0-9a-f]{{{OWNER_HEX}}}$")


def owner_of(identity: str) -> str:
    """The owner part of the ids of the pipeline whose checkpoint has this identity (its query id)."""
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:OWNER_HEX]


@dataclass(frozen=True)
class TransactionalIdFactory:
    prefix: str
    slots: int = DEFAULT_SLOTS
    owner: str | None = None  # None: the legacy scheme <prefix>-<sink partition>-<slot>

    def __post_init__(self) -> None:
        if not _PREFIX.match(self.prefix or ""):
            from kafka_eos.txn.protocol.errors import SinkConfigError
            raise SinkConfigError(
                f"transactional.id.prefix {self.prefix!r} is invalid: use 1-200 characters of "
                "letters, digits, '.', '_' or '-', unique per query (e.g. 'orders-enricher')")
        if self.owner is not None and not _OWNER.match(self.owner):
            raise ValueError(f"id owner {self.owner!r} is not {OWNER_HEX} lower-case hex digits (owner_of())")
        if self.slots < 1:
            raise ValueError("slots must be >= 1")

    @property
    def _head(self) -> str:
        return self.prefix if self.owner is None else f"{self.prefix}-{self.owner}"

    def slot(self, batch_id: int, attempt: int = 0) -> int:
        if attempt < 0:
            raise ValueError(f"task attempt number {attempt} is negative")
        return batch_id % self.slots + self.slots * min(attempt, ATTEMPT_IDS - 1)

    def id_for(self, sink_partition: int, batch_id: int, attempt: int = 0) -> str:
        return f"{self._head}-{sink_partition}-{self.slot(batch_id, attempt)}"

    def describe(self) -> str:
        """Every id this factory can hand out, as ``<prefix>[-<owner>]-<sink partition>-<0..n>``."""
        return f"{self._head}-<sink partition>-<0..{self.slots * ATTEMPT_IDS - 1}>"

    def owns(self, transactional_id: str) -> bool:
        return self.pattern().match(transactional_id) is not None

    def pattern(self) -> re.Pattern:
        return re.compile(rf"^{re.escape(self._head)}-\d+-\d+$")

    def prefix_wide(self) -> "PrefixWideIds":
        """Every id under the prefix, any owner or none (for listings, never for aborting)."""
        return PrefixWideIds(self.prefix, self.slots)


@dataclass(frozen=True)
class PrefixWideIds(TransactionalIdFactory):
    def pattern(self) -> re.Pattern:
        return re.compile(rf"^{re.escape(self.prefix)}-(?:[0-9a-f]{{{OWNER_HEX}}}-)?\d+-\d+$")

    def owner_in(self, transactional_id: str) -> str | None:
        """The owner part of an id under the prefix (None for a legacy id)."""
        rest = transactional_id[len(self.prefix) + 1:].split("-")
        return rest[0] if len(rest) == 3 else None
