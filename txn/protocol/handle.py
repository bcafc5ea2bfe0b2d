"""TxnHandle: what a pre-committed transaction is, as the driver needs it to commit.

Invariants:
- A handle is serialisable (a plain dict with a format version) and self-sufficient: the
  driver commits it from the handle alone, in a process that never saw the producer.
- A handle without a transactional id (or with ``records == 0``) has no transaction: it is
  never committed nor aborted. ``skipped`` means the task did not write because its data for
  this batch is already durable (a replay of a committed sink partition); its ``records`` are
  the rows the replay had for that partition (counted, not written: the replay check).
- ``digests`` (format 2) is the task's evidence per output partition (``write_evidence``), in
  ``digest_format``; empty when the task could not record it. A format-1 handle has none.
- ``timestamp_digests`` (format 3) is the digest of the records' timestamps per output partition,
  in ``timestamp_format``, when the task chose every record's timestamp; ``earliest_timestamp_ms``
  the smallest timestamp the task chose (where ``verify`` begins to read: such records may be far
  older than the commit). A handle without them is written as format 2 (or 1), so what earlier
  builds wrote and read is unchanged.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

HANDLE_FORMAT = 3
READABLE_FORMATS = (1, 2, 3)  # 1: written before the evidence (no digests); 2: no timestamp digests


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
    digests: dict[str, dict[str, str]] = field(default_factory=dict)  # topic -> partition -> record digest
    digest_format: str = ""
    timestamp_digests: dict[str, dict[str, str]] = field(default_factory=dict)  # topic -> partition -> digest
    timestamp_format: str = ""
    earliest_timestamp_ms: int | None = None  # the smallest record timestamp the task chose

    @property
    def has_transaction(self) -> bool:
        return self.records > 0 and self.transactional_id is not None

    def to_dict(self) -> dict:
        """The oldest format that holds what the handle carries: 1 without evidence, 2 without
        timestamp digests (what earlier builds read), else 3."""
        data = asdict(self)
        if not self.timestamp_digests and not self.timestamp_format and self.earliest_timestamp_ms is None:
            del data["timestamp_digests"], data["timestamp_format"], data["earliest_timestamp_ms"]
            if not self.digests and not self.digest_format:
                del data["digests"], data["digest_format"]
                return {"v": 1, **data}
            return {"v": 2, **data}
        return {"v": HANDLE_FORMAT, **data}

    @classmethod
    def from_dict(cls, data: dict) -> "TxnHandle":
        version = data.get("v")
        if version not in READABLE_FORMATS:
            raise ValueError(f"unknown transaction handle format {version!r} (this build reads {READABLE_FORMATS})")
        return cls(**{k: v for k, v in data.items() if k != "v"})

    @classmethod
    def empty(cls, sink_partition: int, skipped: bool = False, records: int = 0) -> "TxnHandle":
        return cls(sink_partition=sink_partition, skipped=skipped, records=records)
