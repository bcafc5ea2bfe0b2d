"""The sink log: the durable record of each batch's commit decision, beside the checkpoint.

Records are create-only (``LogStore.create``): every new state of batch N is a new file
``<N>.<seq>.json`` with ``seq`` one above the record its writer last read or wrote; a create
that finds the name taken means another run wrote a state of that batch meanwhile, and raises
``SinkLogConflictError`` instead of proceeding. The newest ``seq`` of a batch is its state
(a ``BatchState``, persisted by its value; ``txn.states`` holds the allowed transitions, checked
by ``BatchRecord.with_status`` and ``SinkLog.append``):
    decided    -> every handle of the batch is recorded; from now on the batch WILL be
                  committed (by this run or by recovery), never re-written blindly;
    committed  -> every handle's EndTxn succeeded.
Per sink partition (a ``PartitionState``) the record says ``pending``, ``committed`` or ``lost`` (the broker aborted
the transaction before we could commit it; that partition's data must be written again).
``_meta.json`` (create-only too) pins the format version, the transactional-id prefix and the
query id of the checkpoint the log belongs to (Spark's ``<checkpoint>/metadata``).
``SinkLogReader`` reads a log through a ``LogReader`` and creates nothing (executors, progress
lines, validation); only ``SinkLog`` (the driver's writer) creates the location and ``_meta.json``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Mapping

from kafka_eos.option_map import OptionMap
from kafka_eos.txn.errors import SinkLogConflictError, SinkLogError
from kafka_eos.txn.handle import TxnHandle
from kafka_eos.txn.log_store import LogReader, LogStore, versioned
from kafka_eos.txn.states import (BatchState, PartitionState, check_batch_transition,
                                   check_partition_transitions)

LOG_FORMAT = 2
LOG_DIR = "kafka-eos-sink"
META = "_meta.json"
KEEP_BATCHES = 100
DECIDED, COMMITTED = BatchState.DECIDED, BatchState.COMMITTED
PENDING, LOST = PartitionState.PENDING, PartitionState.LOST
_RECORD = re.compile(r"^(\d+)\.(\d+)\.json$")


def location_for(checkpoint: str) -> str:
    """Where the sink log of the query checkpointed at ``checkpoint`` lives (its default place)."""
    return checkpoint.rstrip("/") + "/" + LOG_DIR


def location_from_options(options: Mapping[str, str]) -> str | None:
    """The sink's option ``sinkLogLocation``, else ``location_for(checkpointLocation)`` (keys in any
    case); None when neither is set."""
    options = OptionMap.of(options)
    if options.get("sinkLogLocation"):
        return str(options["sinkLogLocation"])
    checkpoint = options.get("checkpointLocation")
    return location_for(str(checkpoint)) if checkpoint else None


def record_name(batch_id: int, seq: int) -> str:
    return f"{batch_id}.{seq}.json"


@dataclass(frozen=True)
class BatchRecord:
    batch_id: int
    state: BatchState
    num_partitions: int
    handles: tuple[TxnHandle, ...]
    status: dict[int, PartitionState] = field(default_factory=dict)  # sink partition -> its state
    metrics: dict[str, float] = field(default_factory=dict)
    seq: int = 0  # position among the batch's create-only records (set by ``SinkLog.append``)

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

    def to_json(self) -> str:
        return json.dumps({"v": LOG_FORMAT, "batch": self.batch_id, "seq": self.seq, "state": self.state,
                           "num_partitions": self.num_partitions,
                           "handles": [h.to_dict() for h in self.handles],
                           "status": {str(k): v for k, v in sorted(self.status.items())},
                           "metrics": self.metrics}, indent=1)

    @classmethod
    def from_json(cls, text: str, source: str) -> "BatchRecord":
        data = versioned(text, source, "sink log", LOG_FORMAT)
        try:
            state = BatchState(data["state"])
            status = {int(k): PartitionState(v) for k, v in data["status"].items()}
        except ValueError as unknown:  # a state this build does not know
            raise SinkLogError(f"{source}: {unknown}; this kafka-eos build cannot recover it") from None
        return cls(batch_id=data["batch"], state=state, num_partitions=data["num_partitions"],
                   handles=tuple(TxnHandle.from_dict(h) for h in data["handles"]),
                   status=status, metrics=data.get("metrics", {}), seq=data["seq"])


class SinkLogReader:
    """Reads a sink log; creates nothing (a missing location reads as an empty log)."""

    def __init__(self, location: str) -> None:
        self.store: LogReader = LogReader(location)

    def meta(self) -> dict | None:
        text = self.store.read(META)
        return json.loads(text) if text else None

    def _records(self) -> dict[int, int]:
        """batch id -> newest seq."""
        newest: dict[int, int] = {}
        for name in self.store.names():
            match = _RECORD.match(name)
            if match:
                batch, seq = int(match[1]), int(match[2])
                newest[batch] = max(seq, newest.get(batch, -1))
        return newest

    def batch_ids(self) -> list[int]:
        return sorted(self._records())

    def latest_batch_id(self) -> int | None:
        ids = self.batch_ids()
        return ids[-1] if ids else None

    def get(self, batch_id: int) -> BatchRecord | None:
        """The newest state of a batch, or None."""
        seq = self._records().get(batch_id)
        if seq is None:
            return None
        name = record_name(batch_id, seq)
        text = self.store.read(name)
        return BatchRecord.from_json(text, f"{self.store.location}/{name}") if text else None

    def latest(self) -> BatchRecord | None:
        batch_id = self.latest_batch_id()
        return None if batch_id is None else self.get(batch_id)


def check_transition(base: BatchRecord | None, record: BatchRecord) -> None:
    """Raise ``StateTransitionError`` unless ``record`` may follow ``base`` (None: the batch's first record)."""
    check_batch_transition(record.batch_id, None if base is None else base.state, record.state, record.status)
    check_partition_transitions(record.batch_id, {} if base is None else base.status, record.status)


def check_binding(meta: dict | None, where: str, prefix: str, query_id: str | None) -> None:
    """Refuse a sink log whose ``_meta.json`` (``meta``; None: not started, nothing to check) pins
    another format, prefix or query. Creates nothing."""
    if meta is None:
        return
    if meta.get("v") != LOG_FORMAT:
        raise SinkLogError(
            f"{where}: sink log format {meta.get('v')!r} is not {LOG_FORMAT} (this build writes create-only "
            "records bound to the checkpoint's query id). Let the old build finish its last batch, then "
            "start this build with a new checkpointLocation (or sink option sinkLogLocation) and a new "
            "transactional.id.prefix.")
    if meta.get("prefix") != prefix:
        raise SinkLogError(
            f"{where} belongs to transactional.id.prefix {meta.get('prefix')!r}, not "
            f"{prefix!r}: changing the prefix of a running pipeline would orphan its decided "
            "transactions. Keep the old prefix, or start from a new checkpoint location.")
    pinned = meta.get("query_id")
    if pinned and query_id and pinned != query_id:
        raise SinkLogError(
            f"{where} belongs to the query {pinned} (the id in its checkpoint's 'metadata' file), not to "
            f"{query_id}: a sink log reused by another checkpoint would mistake that query's batch ids "
            "for its own. Point sink option sinkLogLocation at a new directory (or drop it to use "
            "<checkpointLocation>/kafka-eos-sink), or restart from the checkpoint that wrote this log.")


class SinkLog(SinkLogReader):
    """Batch records of one sink, written by the driver of the one live query of its checkpoint."""

    def __init__(self, location: str, prefix: str, query_id: str | None = None) -> None:
        self.store: LogStore = LogStore(location)
        self._check_meta(prefix, query_id)

    def _check_meta(self, prefix: str, query_id: str | None) -> None:
        meta = self.meta()
        if meta is None:
            try:
                self.store.create(META, json.dumps({"v": LOG_FORMAT, "prefix": prefix, "query_id": query_id}))
            except FileExistsError:
                pass  # another driver created it at the same moment: check what it pinned
            meta = self.meta()
        check_binding(meta, self.store.location, prefix, query_id)

    def append(self, record: BatchRecord, base: BatchRecord | None) -> BatchRecord:
        """Create the next state of a batch after ``base`` (the state this writer read or wrote
        last; None: the batch has none). Raises SinkLogConflictError when another run wrote it, and
        StateTransitionError (writing nothing) when ``record`` may not follow ``base``."""
        check_transition(base, record)
        record = replace(record, seq=0 if base is None else base.seq + 1)
        name = record_name(record.batch_id, record.seq)
        try:
            self.store.create(name, record.to_json())
        except FileExistsError:
            raise SinkLogConflictError.of_record(f"{self.store.location}/{name}", record.batch_id) from None
        return record

    def prune(self, keep: int = KEEP_BATCHES) -> None:
        records = self._records()
        for batch_id in sorted(records)[:-keep]:
            for seq in range(records[batch_id] + 1):
                self.store.delete(record_name(batch_id, seq))
