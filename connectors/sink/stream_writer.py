"""KafkaEosStreamWriter: the Spark face of the two-phase-commit sink.

Spark's contract (pyspark 4.x Python data sources): ``streamWriter()`` builds a writer on the
driver for every micro-batch and pickles it into the batch's tasks; for ``commit``/``abort`` it
builds a *fresh* writer that is never pickled. So:
- ``__init__`` takes the checkpoint's transactional ids and the prefix's claim once per query and
  process (``prefix_owner.owned_config``: a prefix another checkpoint owns is refused), then runs recovery (finishing a decided batch; idempotent) before the batch's tasks
  exist, and carries the ReplayPlan to them; it pins the sink log to the checkpoint's query id
  (Spark's ``<checkpointLocation>/metadata``; with the ``checkpointLocation`` option only), so a
  sink log of another checkpoint is refused before anything is written;
- one ``TwoPhaseCommitProtocol`` per (query id, sink log) and driver process serves every writer
  of that query in the process (it stays on the driver: it is not pickled);
- pickling the writer for the tasks (on the driver, after recovery, before any task of the batch
  starts; never done to the fresh commit/abort writer, whose batch has pre-committed transactions
  open) is the moment of the query-start cleanup of lingering transactions under the prefix, once
  per (query id, sink log) and process, and of the check that the output topics are the ones
  earlier batches wrote to (``OutputTopicGuard.before_writes``, once per writer, which Spark
  pickles twice): a deleted or re-created topic stops the query before any task writes. Not in
  ``__init__``: a fresh commit/abort writer failing there would leave the batch's transactions
  neither committed nor aborted (the commit checks again before its decision, and aborts);
- ``write`` (executors) pre-commits one transaction per task and returns its handle; a task
  whose sink partition is durable writes nothing but counts its rows (the replay check);
- ``commit`` works from the handles alone (``TwoPhaseCommitProtocol.commit_batch``);
- ``abort`` (Spark calls it when the batch's job failed and also when ``commit`` raised: the catch
  of V2TableWriteExec.writeWithV2) ends every transactional id the batch can have used, by id,
  unless the batch has a decision (``TwoPhaseCommitProtocol.abort_batch``); ``messages`` has one
  entry per sink partition (None for a task that did not report);
- ``release_sink`` is for the caller that ran the query, once it ended (failed or stopped).
"""
from __future__ import annotations

import logging
import sys
from typing import Iterator

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.sink.options import batch_log, fault_plan, sink_config
from kafka_eos.connectors.sink.prefix_owner import owned_config
from kafka_eos.connectors.sink.startup_checks import check_acls, check_schema, check_speculation, check_timeouts
from kafka_eos.txn.fault_injection import task_input
from kafka_eos.txn.faults import FaultPlan
from kafka_eos.txn.handle import TxnHandle
from kafka_eos.txn.kafka_writer import DecisionGuard, KafkaWriter
from kafka_eos.txn.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.sink_config import SinkConfig
from kafka_eos.txn.sink_log import SinkLogReader, check_binding
from kafka_eos.txn.topic_guard import OutputTopicGuard

_Query = tuple[str | None, str]  # (query id of the checkpoint, sink log location)
_protocols: dict[_Query, tuple[SinkConfig, FaultPlan, TwoPhaseCommitProtocol]] = {}
_started: set[_Query] = set()  # queries whose query-start cleanup ran in this process


def checkpoint_query_id(options: dict) -> str | None:
    """The query id Spark keeps in ``<checkpointLocation>/metadata`` ({"id": ...}), if any."""
    location = {k.lower(): v for k, v in options.items()}.get("checkpointlocation")
    return CheckpointReader(str(location)).query_id() if location else None


def driver_protocol(config: SinkConfig, faults: FaultPlan, query_id: str | None) -> TwoPhaseCommitProtocol:
    """The protocol of (query id, sink log) in this driver process, built once (again only if the
    sink's settings changed, e.g. a restarted query with other options in a long-lived process)."""
    key = (query_id, config.log_location)
    cached = _protocols.get(key)
    if cached is None or cached[:2] != (config, faults):
        cached = _protocols[key] = (config, faults, TwoPhaseCommitProtocol.from_config(config, query_id, faults))
    return cached[2]


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
        check_acls(self.config)
        self.query_id = checkpoint_query_id(options)
        # the sink log's binding first (creating nothing: a new log's id scheme is chosen next, from
        # whether it was started): a log of another checkpoint is refused as that, before any claim
        location = self.config.log_location
        check_binding(SinkLogReader(location).meta(), location, self.config.transactional_id_prefix, self.query_id)
        self.config = owned_config(self.config, options, self.query_id)
        self._protocol = driver_protocol(self.config, self.faults, self.query_id)
        self.plan = self._protocol.recover()
        self._task_input = task_input(self.faults)

    def __getstate__(self) -> dict:
        """Spark pickles this writer for the batch's tasks: recovery is done and no task of the batch
        has started, so lingering transactions under the prefix are aborted here, once per query and
        process. The protocol stays on the driver."""
        protocol, query = self.__dict__.get("_protocol"), (self.query_id, self.config.log_location)
        if protocol is not None and query not in _started:  # only a writer built on the driver has one
            _started.add(query)
            protocol.abort_lingering()
        if protocol is not None and not self.__dict__.get("_topics_checked"):
            OutputTopicGuard.from_config(self.config).before_writes()
            self._topics_checked = True
        return {k: v for k, v in self.__dict__.items() if k != "_protocol"}

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
        return SinkCommitMessage(writer.write(self._task_input(iterator, batch_id)).to_dict())

    def commit(self, messages: list, batchId: int) -> None:
        handles = [TxnHandle.from_dict(m.handle) for m in messages]
        self._protocol.commit_batch(batchId, handles)

    def abort(self, messages: list, batchId: int) -> None:
        handles = [TxnHandle.from_dict(m.handle) for m in messages if m is not None]
        self._protocol.abort_batch(batchId, handles, sink_partitions=len(messages))


def release_sink(options: dict) -> None:
    """After the query of these sink options ended (failed or stopped): commit its decided batch if
    the brokers allow (else it stays for the next start), abort every other Ongoing transaction under
    its prefix. Best effort: a failure is logged (the next start cleans up), never raised."""
    config = sink_config(options)
    try:
        driver_protocol(config, fault_plan(options), checkpoint_query_id(options)).release()
    except Exception as exc:  # noqa: BLE001 - the query already ended; the next start cleans up
        logging.getLogger(__name__).warning(
            "kafka-eos: the sink's open transactions under prefix %s were not released (%r); the next start "
            "ends them, or the broker at transaction.timeout.ms", config.transactional_id_prefix, exc)
