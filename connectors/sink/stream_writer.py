"""KafkaEosStreamWriter: the Spark face of the two-phase-commit sink, built by ``QueryStart``.

The writer holds what one batch needs and calls no cluster while it is built or pickled: the
query start (``connectors/sink/query_start.py``: checks, ownership, recovery, the lingering
cleanup, the output-topic check) ran before ``QueryStart.writer`` built it. Enforced here:
- ``write`` (executors) pre-commits one transaction per task (``KafkaWriter``) and returns its
  handle (of the task's rows, or, for offset-range input, of the records it reads: ``range_input``);
  a task whose sink partition is durable (the ``ReplayPlan``) writes nothing but counts its rows
  (the replay check); ``spark.speculation=true`` is refused before a producer opens;
- ``commit`` works from the handles alone (``TwoPhaseCommitProtocol.commit_batch``), and gives the
  protocol the batch's inputs: the text of Spark's offset log file ``<checkpoint>/offsets/<batch>``
  (None when it cannot be read: a commit never fails for it). Under records in Kafka a checkpoint
  at a URI is not read here at all: this Python is not given credentials for its storage (a GCS
  client without them retries for about 15 minutes before it fails), so those decisions carry
  no inputs;
- ``abort`` (Spark calls it when the batch's job failed and also when ``commit`` raised: the catch
  of V2TableWriteExec.writeWithV2) ends every transactional id the batch can have used, by id,
  unless the batch has a decision (``TwoPhaseCommitProtocol.abort_batch``); ``messages`` has one
  entry per sink partition (None for a task that did not report);
- the protocol stays on the driver: pickling the writer for the tasks leaves it out;
- where pyspark has no Arrow stream writer (4.0) it is a row writer whose tasks gather the rows
  into Arrow batches first (``row_batches``), so everything after is the same.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterator, cast

from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import StructType

from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.sink.range_input import task_rows
from kafka_eos.connectors.sink.row_batches import arrow_batches
from kafka_eos.connectors.sink.startup_checks import check_speculation
from kafka_eos.connectors.source.options import SourceOptions
from kafka_eos.connectors.worker_gc import freeze_loaded
from kafka_eos.txn.protocol.fault_injection import task_input
from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.decision_guard import DecisionGuard
from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.log.log_store import child, local_path
from kafka_eos.txn.log.stores import is_kafka, open_reader, register
from kafka_eos.txn.protocol.replay import ReplayPlan
from kafka_eos.txn.protocol.sink_config import SinkConfig

if TYPE_CHECKING:  # the driver's planner and commit runner need no pyarrow of ours
    import pyarrow as pa

    from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol  # the driver's (and kafka-python's) alone

log = logging.getLogger(__name__)
_UNREAD: set[str] = set()  # checkpoints whose offset log this process could not read (warned once)
DRIVER_ONLY = ("_protocol", "_offset_log")


class SinkCommitMessage(WriterCommitMessage):
    """One task's pre-committed transaction (a ``TxnHandle`` as a versioned dict)."""

    def __init__(self, handle: dict) -> None:
        self.handle = handle


def _task_context() -> TaskContext:
    context = TaskContext.get()
    if context is None:  # the AttributeError a None context raised on first use, named
        raise AttributeError("the sink writer's write() runs only in a Spark task (no TaskContext here)")
    return context


class KafkaEosStreamWriter(spark_compat.StreamWriterBase):  # type: ignore[misc,valid-type]  # Arrow where pyspark has it
    def __init__(self, config: SinkConfig, faults: FaultPlan, query_id: str | None, plan: ReplayPlan,
                 protocol: TwoPhaseCommitProtocol, source: SourceOptions | None = None,
                 schema: StructType | None = None) -> None:
        self.config, self.faults, self.query_id, self.plan = config, faults, query_id, plan
        self.source = source  # offset ranges or value references: tasks read them with these (range_input)
        # a row writer's tasks turn rows into Arrow batches of this schema (row_batches)
        self.row_schema = None if spark_compat.ARROW_STREAM_WRITER else schema
        self._protocol = protocol  # driver only: __getstate__ leaves it out of what tasks get
        self._task_input = task_input(faults)

    def __getstate__(self) -> dict:
        """What the tasks get: everything but the driver's protocol (and its offset log reader)."""
        return {k: v for k, v in self.__dict__.items() if k not in DRIVER_ONLY}

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        freeze_loaded()
        if self.row_schema is not None:
            iterator = arrow_batches(iterator, self.row_schema)
        context = _task_context()
        # cast: Spark sets the batch id on every task of a micro-batch
        batch_id = int(cast(str, context.getLocalProperty("streaming.sql.batchId")))
        sink_partition = context.partitionId()
        rows: Iterator = task_rows(iterator, self.source)
        if self.plan.skip(batch_id, sink_partition):
            count = sum(batch.num_rows for batch in rows)  # counted for the replay check, not written
            return SinkCommitMessage(TxnHandle.empty(sink_partition, skipped=True, records=count).to_dict())
        check_speculation(context.getLocalProperty("spark.speculation"))
        register(self.config.log_location, self.config.producer_conf, self.config.transactional_id_prefix)
        writer = KafkaWriter(self.config, batch_id, sink_partition, attempt=context.attemptNumber(),
                             decided=DecisionGuard(self.config.log_location, planned_after=self.plan.batch_id))
        return SinkCommitMessage(writer.write(self._task_input(rows, batch_id)).to_dict())

    def commit(self, messages: list, batchId: int) -> None:
        freeze_loaded()
        handles = [TxnHandle.from_dict(m.handle) for m in messages]
        self._protocol.commit_batch(batchId, handles, self._inputs(batchId))

    def _inputs(self, batch_id: int) -> str | None:
        """The text of Spark's ``<checkpoint>/offsets/<batch_id>`` (what a re-run of the batch reads),
        or None: no checkpoint option, no such file, or it could not be read."""
        checkpoint = self.config.checkpoint_location
        if not checkpoint or (local_path(checkpoint) is None and is_kafka(self.config.log_location)):
            return None
        try:
            reader = self.__dict__.get("_offset_log")
            if reader is None:  # one reader per writer: a remote one costs a client
                reader = self._offset_log = open_reader(child(checkpoint, "offsets"))
            return reader.read(str(batch_id))
        except Exception as exc:  # noqa: BLE001 - evidence for a later re-run, never a reason to fail a commit
            if checkpoint not in _UNREAD:  # once per worker: a store this Python cannot open fails every batch
                _UNREAD.add(checkpoint)
                log.warning("kafka-eos: batch %d: could not read Spark's offset log under %s (%s); its sink log "
                            "record has no inputs (nor has a later batch's while this stays so): verify --recompute "
                            "reaches back only as far as Spark's offset log", batch_id, checkpoint, exc)
            return None

    def abort(self, messages: list, batchId: int) -> None:
        handles = [TxnHandle.from_dict(m.handle) for m in messages if m is not None]
        self._protocol.abort_batch(batchId, handles, sink_partitions=len(messages))
