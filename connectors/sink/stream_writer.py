"""KafkaEosStreamWriter: the Spark face of the two-phase-commit sink.

Spark's contract (pyspark 4.x Python data sources): ``streamWriter()`` builds a writer on the
driver for every micro-batch, pickles it into the batch's tasks, and builds a *fresh* one for
``commit``/``abort``. So:
- ``__init__`` runs recovery (finishing a decided batch; idempotent) before the batch's tasks
  exist, and carries the ReplayPlan to them;
- ``write`` (executors) pre-commits one transaction per task and returns its handle;
- ``commit`` works from the handles alone (``TwoPhaseCommitProtocol.commit_batch``).
"""
from __future__ import annotations

import logging
import sys
from typing import Iterator

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from connectors.sink.options import batch_log, fault_plan, sink_config
from connectors.sink.startup_checks import check_schema, check_timeouts
from txn.handle import TxnHandle
from txn.kafka_writer import KafkaWriter
from txn.protocol import TwoPhaseCommitProtocol


def _log_to_stderr(batches: bool) -> None:
    """kafka-eos logs to stderr; the per-batch INFO line only with option batchLog (default true)."""
    logger = logging.getLogger("kafka_eos")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    logging.getLogger("kafka_eos.sink").setLevel(logging.INFO if batches else logging.WARNING)


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
        self.plan = TwoPhaseCommitProtocol(self.config, self.faults).recover()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        context = TaskContext.get()
        batch_id = int(context.getLocalProperty("streaming.sql.batchId"))
        sink_partition = context.partitionId()
        if self.plan.skip(batch_id, sink_partition):
            return SinkCommitMessage(TxnHandle.empty(sink_partition, skipped=True).to_dict())
        writer = KafkaWriter(self.config, batch_id, sink_partition)
        return SinkCommitMessage(writer.write(self._with_faults(iterator, batch_id)).to_dict())

    def _with_faults(self, iterator: Iterator[pa.RecordBatch], batch_id: int) -> Iterator[pa.RecordBatch]:
        for index, batch in enumerate(iterator):
            yield batch
            if index == 0:
                self.faults.hit("task_write", batch_id)

    def commit(self, messages: list, batchId: int) -> None:
        handles = [TxnHandle.from_dict(m.handle) for m in messages]
        TwoPhaseCommitProtocol(self.config, self.faults).commit_batch(batchId, handles)

    def abort(self, messages: list, batchId: int) -> None:
        handles = [TxnHandle.from_dict(m.handle) for m in messages if m is not None]
        TwoPhaseCommitProtocol(self.config, self.faults).abort_batch(handles)
