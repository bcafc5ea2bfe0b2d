"""The sink log: the durable record of each batch's commit decision, beside the checkpoint.

One file per batch, ``<batch id>.json``, replaced atomically at each step:
    decided    -> every handle of the batch is recorded; from now on the batch WILL be
                  committed (by this run or by recovery), never re-written blindly;
    committed  -> every handle's EndTxn succeeded.
Per sink partition the record says ``pending``, ``committed`` or ``lost`` (the broker aborted
the transaction before we could commit it; that partition's data must be written again).
``_meta.json`` pins the format version and the transactional-id prefix of the log.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from txn.errors import SinkLogError
from txn.handle import TxnHandle
from txn.log_store import LogStore

LOG_FORMAT = 1
KEEP_BATCHES = 100
DECIDED, COMMITTED = "decided", "committed"
PENDING, PART_COMMITTED, LOST = "pending", "committed", "lost"


@dataclass(frozen=True)
class BatchRecord:
    batch_id: int
    state: str
    num_partitions: int
    handles: tuple[TxnHandle, ...]
    status: dict[int, str] = field(default_factory=dict)  # sink partition -> pending|committed|lost
    metrics: dict[str, float] = field(default_factory=dict)

    def partitions_with(self, status: str) -> set[int]:
        return {p for p, s in self.status.items() if s == status}

    def durable_partitions(self) -> set[int]:
        """Sink partitions whose data for this batch is committed in Kafka (or had none)."""
        written = {h.sink_partition for h in self.handles if h.has_transaction}
        empty = set(range(self.num_partitions)) - written
        return empty | self.partitions_with(PART_COMMITTED)

    def with_status(self, updates: dict[int, str], state: str | None = None) -> "BatchRecord":
        return replace(self, status={**self.status, **updates}, state=state or self.state)

    def to_json(self) -> str:
        return json.dumps({"v": LOG_FORMAT, "batch": self.batch_id, "state": self.state,
                           "num_partitions": self.num_partitions,
                           "handles": [h.to_dict() for h in self.handles],
                           "status": {str(k): v for k, v in sorted(self.status.items())},
                           "metrics": self.metrics}, indent=1)

    @classmethod
    def from_json(cls, text: str, source: str) -> "BatchRecord":
        data = json.loads(text)
        if data.get("v") != LOG_FORMAT:
            raise SinkLogError(f"{source}: sink log format {data.get('v')!r} is not {LOG_FORMAT}; "
                               "this kafka-eos build cannot recover it (use the build that wrote it)")
        return cls(batch_id=data["batch"], state=data["state"], num_partitions=data["num_partitions"],
                   handles=tuple(TxnHandle.from_dict(h) for h in data["handles"]),
                   status={int(k): v for k, v in data["status"].items()}, metrics=data.get("metrics", {}))


class SinkLog:
    """Batch records of one sink; the only writer is the driver of the one live query."""

    def __init__(self, location: str, prefix: str) -> None:
        self.store = LogStore(location)
        self._check_meta(prefix)

    def _check_meta(self, prefix: str) -> None:
        text = self.store.read("_meta.json")
        if text is None:
            self.store.write_atomic("_meta.json", json.dumps({"v": LOG_FORMAT, "prefix": prefix}))
            return
        meta = json.loads(text)
        if meta.get("v") != LOG_FORMAT:
            raise SinkLogError(f"{self.store.location}: sink log format {meta.get('v')!r} is not {LOG_FORMAT}")
        if meta.get("prefix") != prefix:
            raise SinkLogError(
                f"{self.store.location} belongs to transactional.id.prefix {meta.get('prefix')!r}, not "
                f"{prefix!r}: changing the prefix of a running pipeline would orphan its decided "
                "transactions. Keep the old prefix, or start from a new checkpoint location.")

    def batch_ids(self) -> list[int]:
        return sorted(int(n[:-5]) for n in self.store.names() if n.endswith(".json") and n[:-5].isdigit())

    def get(self, batch_id: int) -> BatchRecord | None:
        text = self.store.read(f"{batch_id}.json")
        return BatchRecord.from_json(text, f"{self.store.location}/{batch_id}.json") if text else None

    def latest(self) -> BatchRecord | None:
        ids = self.batch_ids()
        return self.get(ids[-1]) if ids else None

    def write(self, record: BatchRecord) -> None:
        self.store.write_atomic(f"{record.batch_id}.json", record.to_json())

    def prune(self, keep: int = KEEP_BATCHES) -> None:
        for batch_id in self.batch_ids()[:-keep]:
            self.store.delete(f"{batch_id}.json")
