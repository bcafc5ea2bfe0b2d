"""KafkaEosStreamWriter: the Spark face of the two-phase-commit sink.

Spark's contract (pyspark 4.x Python data sources): ``streamWriter()`` builds a writer on the
driver for every micro-batch, pickles it into the batch's tasks, and builds a *fresh* one for
``commit``/``abort``. So:
- ``__init__`` runs recovery (finishing a decided batch; idempotent) before the batch's tasks
  exist, and carries the ReplayPlan to them; it pins the sink log to the checkpoint's query id
  (Spark's ``<checkpointLocation>/metadata``; with the ``checkpointLocation`` option only), so a
  sink log of another checkpoint is refused before anything is written;
- the first ``__init__`` of the *write planning* path in a driver process (not the fresh one
  Spark builds for commit/abort, whose batch has pre-committed transactions open) also aborts
  lingering transactions under the prefix, once per sink log (query start);
- ``write`` (executors) pre-commits one transaction per task and returns its handle; a task
  whose sink partition is durable writes nothing but counts its rows (the replay check);
- ``commit`` works from the handles alone (``TwoPhaseCommitProtocol.commit_batch``).
"""
from __future__ import annotations

import json
import logging
import sys
from typing import Iterator

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from kafka_eos.connectors.sink.options import batch_log, fault_plan, sink_config
from kafka_eos.connectors.sink.startup_checks import check_schema, check_speculation, check_timeouts
from kafka_eos.txn.handle import TxnHandle
from kafka_eos.txn.faults import paused_before_first
from kafka_eos.txn.kafka_writer import DecisionGuard, KafkaWriter
from kafka_eos.txn.log_store import LogStore
from kafka_eos.txn.protocol import TwoPhaseCommitProtocol

_PLANNING_MODULE = "write_into_data_source.py"  # pyspark's worker that builds the writer for the tasks
_started: set[str] = set()  # sink logs whose query-start cleanup ran in this process


def checkpoint_query_id(options: dict) -> str | None:
    """The query id Spark keeps in ``<checkpointLocation>/metadata`` ({"id": ...}), if any."""
    location = {k.lower(): v for k, v in options.items()}.get("checkpointlocation")
    text = LogStore(str(location), create=False).read("metadata") if location else None
    return json.loads(text.splitlines()[0]).get("id") if text else None


def _query_start(log_location: str) -> bool:
    """True once per process and sink log, and only when Spark is planning the tasks' writer."""
    frame = sys._getframe(1)
    while frame is not None and not frame.f_code.co_filename.endswith(_PLANNING_MODULE):
        frame = frame.f_back
    if frame is None or log_location in _started:
        return False
    _started.add(log_location)
    return True


def _log_to_stderr(batches: bool) -> None:
    """kafka-eos logs to stderr; the per-batch INFO line only with option batchLog (default true)."""
    logger = logging.getLogger("kafka_eos")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    logging.getLogger("kafka_eos.txn.protocol").setLevel(logging.INFO if batches else logging.WARNING)


class SinkCommitMessage(WriterCommitMessage):
    """One task's pre-committed transaction (a ``TxnHandle`` as a versioned dict)."""

    def __init__(self, handle: dict) -> None:
        self.handle = handle


class KafkaEosStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: dict, schema: StructType) -> None:
        _log_to_stderr(batch_log(options))
        self.config = sink_config(options)
        self.faults = fault_plan(options)
        check_schema(schema, self.config)
        check_timeouts(self.config)
        self.query_id = checkpoint_query_id(options)
        protocol = TwoPhaseCommitProtocol(self.config, self.faults, self.query_id)
        self.plan = protocol.recover(query_start=_query_start(self.config.log_location))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        context = TaskContext.get()
        batch_id = int(context.getLocalProperty("streaming.sql.batchId"))
        sink_partition = context.partitionId()
        if self.plan.skip(batch_id, sink_partition):
            rows = sum(batch.num_rows for batch in iterator)  # counted for the replay check, not written
            return SinkCommitMessage(TxnHandle.empty(sink_partition, skipped=True, records=rows).to_dict())
        check_speculation(context.getLocalProperty("spark.speculation"))
        writer = KafkaWriter(self.config, batch_id, sink_partition, attempt=context.attemptNumber(),
                             decided=DecisionGuard(self.config.log_location, planned_after=self.plan.batch_id))
        rows = paused_before_first(self._with_faults(iterator, batch_id), self.faults, "task_start", batch_id)
        return SinkCommitMessage(writer.write(rows).to_dict())

    def _with_faults(self, iterator: Iterator[pa.RecordBatch], batch_id: int) -> Iterator[pa.RecordBatch]:
        for index, batch in enumerate(iterator):
            yield batch
            if index == 0:
                self.faults.hit("task_write", batch_id)

    def commit(self, messages: list, batchId: int) -> None:
        handles = [TxnHandle.from_dict(m.handle) for m in messages]
        TwoPhaseCommitProtocol(self.config, self.faults, self.query_id).commit_batch(batchId, handles)

    def abort(self, messages: list, batchId: int) -> None:
        handles = [TxnHandle.from_dict(m.handle) for m in messages if m is not None]
        TwoPhaseCommitProtocol(self.config, self.faults, self.query_id).abort_batch(handles)
