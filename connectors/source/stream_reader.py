"""``spark.readStream.format("kafka-eos")``: micro-batches over exact, replayable offset ranges.

Offsets as state: every offset this reader returns is the versioned map of ``kafka_eos.offsets.model``
(``{"v": 1, "topics": {topic: {partition: next offset}}}``). Spark writes a batch's end to its
offset log before the batch runs, and a restarted query replays or resumes from that log, so
the log is the source's operator state. With ``kafka.group.id`` set, processed offsets are
written to that consumer group (on ``commit``, and on the next ``latestOffset``, whose start
Spark has finished) for lag monitoring only; they are never read.

``latestOffset`` only wires the planning steps of ``kafka_eos.offsets.plan_steps`` (lookups,
data loss, caps, alignment, admission, entering partitions, the stored end), where each is a
pure, unit-tested function; the data-loss policy and the alignment are passed in from here.

Invariants:
- ``latestOffset`` never goes past the last stable offset (read_committed end), nor past the
  Trigger.AvailableNow target, and with a ``ReadMaxRows`` limit admits at most that many
  offsets across all partitions (``kafka_eos.offsets.admission``). With ``alignMaxDriftMs`` the
  ends are first aligned in event time (``kafka_eos.connectors.source.alignment``), then admitted:
  alignment only shapes batches, the AvailableNow target stays the final end.
- A partition never goes backwards except through the data-loss policy: with
  failOnDataLoss=false a partition whose offsets were deleted or reset resumes at the earliest
  available offset, and a vanished partition is dropped.
- A partition discovered after the query started (new partition, new topic matching a pattern)
  enters the end offset at its earliest offset; the following batches read it from there.
- The start is decided once. Spark asks ``initialOffset()`` again before batch 0 runs and on
  every replay of batch 0, and its offset log keeps only batch 0's end; so the end of batch 0
  carries the start it was planned from (``kafka_eos.offsets.model``: an ``initial`` start makes
  ``latestOffset`` record it as ``start``), and ``partitions`` reads batch 0 from that
  recorded start, never from a newer ``latest`` or timestamp resolution. Without new data
  ``latestOffset`` returns its start unchanged, so Spark (which compares the JSON text) sees
  no new data after batch 0 either; a new query's batch 0 always runs (possibly empty), which
  writes its start to the offset log at once, as Spark's own Kafka source persists its start.
- ``partitions(start, end)`` depends only on its arguments, so a replayed batch reads the
  same records in the same tasks: ``latestOffset`` records the batch's task count on its end
  (``planning.batch_tasks``: maxTasksPerBatch, else the cluster's task slots), and an end written
  before the count was recorded keeps the layout of the ``maxTasksPerBatch`` option.
- While the ``stopMarker`` exists (``source.stop_marker``, in the checkpoint's store; a graceful
  stop was requested), ``latestOffset`` plans no
  new data: it returns its start unchanged, so Spark finishes the running batch and plans no
  other. A new query's batch 0 still runs, empty, to record its start.
- With ``replayOffsetLog`` the ends are another checkpoint's, batch by batch (``replay``).
- With ``availableNowTarget`` no end goes past those offsets (what Trigger.AvailableNow's target
  is, taken by the caller: ``run --once`` where pyspark has no admission control).
- Where pyspark hands ``latestOffset`` no start (4.0, 4.1) ``legacy_reader`` keeps it and calls
  this planning.
"""
from __future__ import annotations

import json
import logging

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.types import StructType

from kafka_eos.connectors.spark_compat import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from kafka_eos.connectors.source.alignment import SourceAligner
from kafka_eos.connectors.source.arrow_rows import arrow_schema
from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options
from kafka_eos.connectors.source.partition_reader import read_partition
from kafka_eos.connectors.source.planning import (apply_data_loss_policy, batch_tasks, input_partitions,
                                                  task_ranges)
from kafka_eos.connectors.source.range_rows import range_batch
from kafka_eos.connectors.source.value_refs import with_value_refs
from kafka_eos.connectors.source.replay import recorded_end
from kafka_eos.connectors.source.stop_marker import StopMarker
from kafka_eos.connectors.worker_gc import freeze_loaded
from kafka_eos.offsets import model
from kafka_eos.offsets import plan_steps as steps
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.offsets.model import Offsets
from kafka_eos.offsets.spec import resolve

log = logging.getLogger(__name__)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side of the stream (offset planning) plus ``read`` for the executors."""

    def __init__(self, options: dict, schema: StructType, cores: int | None = None) -> None:
        self.options = parse_source_options(options, streaming=True)
        self.schema = schema
        self.cores = cores  # the cluster's task slots when registered (None: this machine's CPUs)
        self._kafka: KafkaOffsets | None = None
        # Trigger.AvailableNow, or option availableNowTarget: never read past this
        self._target: Offsets | None = _target(self.options.target)
        self._latest: Offsets | None = None   # last seen read_committed ends, for progress reports
        self._published: Offsets | None = None  # last offsets written to kafka.group.id
        self._aligner: SourceAligner | None = None  # alignMaxDriftMs set: event-time alignment
        self._stop_marker = StopMarker(self.options.stop_marker) if self.options.stop_marker else None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_kafka"] = None  # clients are per process; executors never need the driver's
        state["_aligner"] = None
        return state

    @property
    def kafka(self) -> KafkaOffsets:
        if self._kafka is None:
            self._kafka = KafkaOffsets(self.options.admin_conf(), self.options.lookup_timeout_ms / 1000)
        return self._kafka

    @property
    def aligner(self) -> SourceAligner:
        if self._aligner is None:
            self._aligner = SourceAligner(self.options.align_max_drift_ms or 0, self.options.align_idle_timeout_ms,
                                          self.kafka, self.options.kafka_conf, self.options.lookup_timeout_ms / 1000)
        return self._aligner

    def initialOffset(self) -> dict:
        listing = self.kafka.listing(self.options.subscription)
        missing = self.options.subscription.missing(listing)
        if missing:
            raise ValueError(f"option assign names partitions Kafka does not have: "
                             f"{', '.join(map(model.describe, missing))}. Create them or fix the option.")
        tps = self.options.subscription.select(listing)
        start = resolve(self.options.starting, tps, self.kafka, self.options.timestamp_strategy)
        log.info("kafka-eos source %s starts at %s", self.options.subscription, start)
        return model.encode(start, initial=True)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self.kafka.partitions(self.options.subscription)
        self._target = self.kafka.latest(tps)
        log.info("kafka-eos source: Trigger.AvailableNow reads up to %s", self._target)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """Wires the planning steps of ``kafka_eos.offsets.plan_steps`` (numbered there)."""
        if self.options.replay is not None:
            return recorded_end(self.options.replay, start)
        begin = model.decode(start)
        self._publish(begin)  # Spark asks for the next batch only once the batch ending at `start` is done
        if self._stop_requested():
            return self._named(start, steps.held_end(start, begin))
        max_rows = _max_rows(limit)
        view = steps.look_up(self.kafka, self.options.subscription, self._target)          # step 1
        self._latest = view.latest
        end = steps.plan_end(begin, view, self._target,                                    # steps 2-7
                             on_findings=lambda found: apply_data_loss_policy(found, self.options.fail_on_data_loss),
                             align=self._align if self.options.align_max_drift_ms is not None else None,
                             max_rows=max_rows)
        tasks = batch_tasks(begin, end, self.options.min_partitions, self.options.max_tasks_per_batch, self.cores)
        return self._named(start, steps.batch_end(start, begin, end, tasks=tasks))

    def _named(self, start: dict, end: dict) -> dict:
        """``end`` naming this scan (option scanName), unless it is ``start`` unchanged (no new data)."""
        return end if end == start else model.with_scan(end, self.options.scan_name)

    def _align(self, start: Offsets, end: Offsets, latest: Offsets) -> Offsets:
        return self.aligner.plan(start, end, latest, self._target)

    def _stop_requested(self) -> bool:
        return self._stop_marker is not None and self._stop_marker.present()

    def reportLatestOffset(self) -> dict | None:
        return model.encode(self._latest) if self._latest is not None else None

    def partitions(self, start: dict, end: dict):
        begin = model.decode(start)
        if model.is_initial(start):  # batch 0: read from the start it was planned with
            begin = model.planned_start(end) or begin
        tasks = model.planned_tasks(end)
        return input_partitions(begin, model.decode(end), self.options.min_partitions,
                                self.options.max_tasks_per_batch if tasks is None else tasks)

    def read(self, partition):
        freeze_loaded()
        if self.options.emit_ranges:  # the sink reads the records (range_rows)
            return iter([range_batch(task_ranges(partition), self.options.kafka_conf["bootstrap.servers"])])
        batches = read_partition(partition, self.options, arrow_schema(self.schema))
        if self.options.emit_value_refs:  # the sink reads the values back (value_refs)
            return with_value_refs(batches, self.options.kafka_conf["bootstrap.servers"])
        return batches

    def commit(self, end: dict) -> None:
        """Spark finished every batch up to ``end``: publish it for lag monitoring."""
        self._publish(model.decode(end))

    def stop(self) -> None:
        if self._aligner is not None:
            self._aligner.close()
            self._aligner = None

    def _publish(self, offsets: Offsets) -> None:
        """Write ``offsets`` to kafka.group.id (if set) for lag tools; recovery never reads them. A
        replay (``verify --recompute``) publishes nothing: it re-reads old batches."""
        if not self.options.group_id or self.options.replay is not None or offsets == self._published:
            return
        try:
            self.kafka.commit_group(self.options.group_id, offsets)
            self._published = dict(offsets)
        except Exception as exc:  # noqa: BLE001 - monitoring must never fail the query
            log.warning("kafka-eos source: could not commit offsets to consumer group %r for monitoring "
                        "(the query is unaffected): %s", self.options.group_id, exc)


def _target(text: str | None) -> Offsets | None:
    """The offsets of option availableNowTarget (``{topic: {partition: offset}}``), or None."""
    if text is None:
        return None
    try:
        return model.decode({"v": model.FORMAT_VERSION, "topics": json.loads(text)})
    except ValueError as exc:
        raise SourceOptionError(f"option availableNowTarget: {exc}; give {{topic: {{partition: offset}}}} as JSON") from None


def _max_rows(limit: ReadLimit) -> int | None:
    """The offsets one batch may admit (``ReadMaxRows``), or None (``ReadAllAvailable``)."""
    if isinstance(limit, ReadMaxRows):
        return limit.max_rows
    if not isinstance(limit, ReadAllAvailable):
        raise ValueError(f"the kafka-eos source does not support read limit {limit!r}")
    return None
