"""TxnHandle: what a pre-committed transaction is, as the driver needs it to commit.

Invariants:
- A handle is serialisable (a plain dict with a format version) and self-sufficient: the
  driver commits it from the handle alone, in a process that never saw the producer.
- A handle without a transactional id (or with ``records == 0``) has no transaction: it is
  never committed nor aborted. ``skipped`` means the task did not write because its data for
  this batch is already durable (a replay of a committed sink partition); its ``records`` are
  the rows the replay had for that partition (counted, not written: the replay check).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

HANDLE_FORMAT = 1


@dataclass(frozen=True)
class TxnHandle:
    sink_partition: int
    transactional_id: str | None = None
    producer_id: int = -1
    producer_epoch: int = -1
    records: int = 0
    partitions: dict[str, dict[str, int]] = field(default_factory=dict)  # topic -> partition -> count
    precommit_ms: float = 0.0
    skipped: bool = False

    @property
    def has_transaction(self) -> bool:
        return self.records > 0 and self.transactional_id is not None

    def to_dict(self) -> dict:
        return {"v": HANDLE_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> "TxnHandle":
        version = data.get("v")
        if version != HANDLE_FORMAT:
            raise ValueError(f"unknown transaction handle format {version!r} (this build reads {HANDLE_FORMAT})")
        return cls(**{k: v for k, v in data.items() if k != "v"})

    @classmethod
    def empty(cls, sink_partition: int, skipped: bool = False, records: int = 0) -> "TxnHandle":
        return cls(sink_partition=sink_partition, skipped=skipped, records=records)
