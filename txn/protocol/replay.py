"""What a replay of a decided batch may do: which sink partitions it skips (``ReplayPlan``) and
whether it has the decided rows (``replay_mismatch``): as many sink partitions and, per sink
partition (empty ones too), the decided record count. Pure: the protocol aborts and raises.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafka_eos.txn.protocol.errors import ReplayMismatchError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.log.sink_log import BatchRecord


@dataclass(frozen=True)
class ReplayPlan:
    """Which sink partitions of the last logged batch are durable (tasks skip re-writing them)."""
    batch_id: int | None = None
    durable: frozenset[int] = field(default_factory=frozenset)

    def skip(self, batch_id: int, sink_partition: int) -> bool:
        return batch_id == self.batch_id and sink_partition in self.durable


def replay_mismatch(batch_id: int, handles: list[TxnHandle], previous: BatchRecord) -> ReplayMismatchError | None:
    """None when the replay may re-write the decided batch's lost partitions, else the refusal."""
    rewrite = sorted(set(range(previous.num_partitions)) - previous.durable_partitions())
    if len(handles) == previous.num_partitions and not rewrite:
        return None
    replay = {h.sink_partition: h.records for h in handles}
    differ = [p for p in range(max(previous.num_partitions, len(handles)))
              if replay.get(p, 0) != previous.records_of(p)]
    if len(handles) == previous.num_partitions and not differ:
        return None
    counts = "; ".join(f"sink partition {p}: decided {previous.records_of(p)}, replay {replay.get(p, 0)}"
                       for p in differ[:20])
    return ReplayMismatchError.of_batch(batch_id, rewrite, sum(previous.records_of(p) for p in rewrite),
                                        len(handles), previous.num_partitions, counts)
