"""One record of the sink log: a batch's commit decision and each sink partition's state.

Enforced here: the record's format version (``LOG_FORMAT``: a record of another version is refused,
naming the build that can read it), its states as ``txn.states`` names them (an unknown one
refused), and that a record only follows another by a transition ``txn.states`` allows
(``check_transition``). Where records live and how they are written: ``sink_log``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Mapping

from kafka_eos.txn.log.log_store import versioned
from kafka_eos.txn.protocol.errors import SinkLogError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.states import (BatchState, PartitionState, check_batch_transition,
                                           check_partition_transitions)

LOG_FORMAT = 2
DECIDED, COMMITTED = BatchState.DECIDED, BatchState.COMMITTED
PENDING, LOST = PartitionState.PENDING, PartitionState.LOST


@dataclass(frozen=True)
class BatchRecord:
    batch_id: int
    state: BatchState
    num_partitions: int
    handles: tuple[TxnHandle, ...]
    status: dict[int, PartitionState] = field(default_factory=dict)  # sink partition -> its state
    metrics: dict[str, float] = field(default_factory=dict)
    seq: int = 0  # position among the batch's create-only records (set by ``SinkLog.append``)
    inputs: str | None = None  # the engine's description of the batch's input (opaque here)

    def __post_init__(self) -> None:  # plain strings of a caller or a log file become states
        object.__setattr__(self, "state", BatchState(self.state))
        object.__setattr__(self, "status", {p: PartitionState(s) for p, s in self.status.items()})

    def partitions_with(self, status: PartitionState) -> set[int]:
        return {p for p, s in self.status.items() if s == status}

    def durable_partitions(self) -> set[int]:
        """Sink partitions whose data for this batch is committed in Kafka (or had none)."""
        written = {h.sink_partition for h in self.handles if h.has_transaction}
        empty = set(range(self.num_partitions)) - written
        return empty | self.partitions_with(PartitionState.COMMITTED)

    def records_of(self, sink_partition: int) -> int:
        """Records the decision logged for one sink partition (0 when it had none)."""
        return sum(h.records for h in self.handles if h.sink_partition == sink_partition)

    def handles_with(self, status: PartitionState) -> list[TxnHandle]:
        return [h for h in self.handles if self.status.get(h.sink_partition) == status]

    def with_status(self, updates: Mapping[int, PartitionState], state: BatchState | None = None) -> "BatchRecord":
        """This record with ``updates`` applied (and ``state``, if given); raises ``StateTransitionError``
        for a transition ``txn.states`` does not allow."""
        changed = replace(self, status={**self.status, **updates}, state=state or self.state)
        check_transition(self, changed)
        return changed

    def to_dict(self) -> dict:
        data = {"v": LOG_FORMAT, "batch": self.batch_id, "seq": self.seq, "state": self.state,
                "num_partitions": self.num_partitions, "handles": [h.to_dict() for h in self.handles],
                "status": {str(k): v for k, v in sorted(self.status.items())}, "metrics": self.metrics}
        if self.inputs is not None:
            data["inputs"] = self.inputs
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str, source: str) -> "BatchRecord":
        return cls.from_dict(versioned(text, source, "sink log", LOG_FORMAT), source)

    @classmethod
    def from_dict(cls, data: dict, source: str) -> "BatchRecord":
        if data.get("v") != LOG_FORMAT:
            raise SinkLogError(f"{source}: sink log format {data.get('v')!r} is not {LOG_FORMAT}; this kafka-eos "
                               "build cannot read it (use the build that wrote it)")
        try:
            state = BatchState(data["state"])
            status = {int(k): PartitionState(v) for k, v in data["status"].items()}
        except ValueError as unknown:  # a state this build does not know
            raise SinkLogError(f"{source}: {unknown}; this kafka-eos build cannot recover it") from None
        return cls(batch_id=data["batch"], state=state, num_partitions=data["num_partitions"],
                   handles=tuple(TxnHandle.from_dict(h) for h in data["handles"]),
                   status=status, metrics=data.get("metrics", {}), seq=data["seq"], inputs=data.get("inputs"))


def check_transition(base: BatchRecord | None, record: BatchRecord) -> None:
    """Raise ``StateTransitionError`` unless ``record`` may follow ``base`` (None: the batch's first record)."""
    check_batch_transition(record.batch_id, None if base is None else base.state, record.state, record.status)
    check_partition_transitions(record.batch_id, {} if base is None else base.status, record.status)
