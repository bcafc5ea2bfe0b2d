"""KafkaWriter: one task's rows in one Kafka transaction, pre-committed (Flink's KafkaWriter).

Steps for task (batch N, sink partition k):
  1. nothing to write          -> no producer, no transaction, empty handle;
  2. init_transactions on id(k, N) -> fences every older attempt on that id and aborts its txn;
  3. begin, produce every row, flush (= pre-commit: all records acknowledged by the leaders);
  4. read producer id + epoch from librdkafka's statistics (``eos`` object), return the handle;
  5. drop the producer WITHOUT aborting: the transaction stays Ongoing until the driver ends it.
A delivery error fails the task (the retry re-runs step 2 and fences this attempt).
"""
from __future__ import annotations

import json
import time
from typing import Iterable, Iterator

import pyarrow as pa
from confluent_kafka import KafkaException, Producer

from txn.handle import TxnHandle
from txn.sink_config import SinkConfig

STATS_INTERVAL_MS = 50


class KafkaWriteError(RuntimeError):
    """A record could not be written; the message names it and the fix."""


class KafkaWriter:
    def __init__(self, config: SinkConfig, batch_id: int, sink_partition: int) -> None:
        self.config, self.batch_id, self.sink_partition = config, batch_id, sink_partition
        self.transactional_id = config.ids.id_for(sink_partition, batch_id)
        self._producer: Producer | None = None
        self._stats: list[str] = []
        self._errors: list[str] = []
        self._records = 0

    def write(self, batches: Iterable[pa.RecordBatch]) -> TxnHandle:
        for batch in batches:
            if batch.num_rows:
                self._produce_batch(batch)
        if self._producer is None:
            return TxnHandle.empty(self.sink_partition)
        return self._precommit()

    # -- step 2/3 ------------------------------------------------------------------------
    def _open(self) -> Producer:
        settings = self.config.producer_settings(self.transactional_id)
        # Only failed deliveries are reported (per-record callbacks cost a quarter of the
        # write time); per-partition counts come from the statistics at pre-commit.
        settings.update({"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": self._stats.append,
                         "on_delivery": self._delivered, "delivery.report.only.error": True,
                         "error_cb": self._error})
        producer = Producer(settings)
        if self.config.exactly_once:
            producer.init_transactions(max(30.0, self.config.transaction_timeout_ms / 1000))
            producer.begin_transaction()
        return producer

    def _produce_batch(self, batch: pa.RecordBatch) -> None:
        if self._producer is None:
            self._producer = self._open()
        produce, poll = self._producer.produce, self._producer.poll
        topics, keys, values, partitions, headers = self._columns(batch)
        for row in range(batch.num_rows):
            topic = topics[row]
            if topic is None:
                raise KafkaWriteError(
                    f"row {row} of batch {self.batch_id} (key={keys[row]!r:.60}) has no topic: set the sink "
                    "option 'topic' or give every row a non-null 'topic' column")
            args = (topic, values[row], keys[row], partitions[row] if partitions else -1)
            extra = {"headers": [(h["key"], h["value"]) for h in headers[row]]} if headers and headers[row] else {}
            while True:
                try:
                    produce(*args, **extra)  # headers by keyword: positional order varies by release
                    break
                except BufferError:
                    poll(0.05)
        self._records += batch.num_rows
        poll(0)

    def _columns(self, batch: pa.RecordBatch) -> tuple[list, list, list, list | None, list | None]:
        names = batch.schema.names
        n = batch.num_rows
        if "value" not in names:
            raise KafkaWriteError("the sink needs a 'value' column (string or binary); "
                                  f"got columns {names}: select or alias one as 'value'")

        def column(name: str) -> list | None:
            return batch.column(name).to_pylist() if name in names else None

        # As in Spark's Kafka sink, the 'topic' option overrides a 'topic' column.
        topics = [self.config.topic] * n if self.config.topic or "topic" not in names else column("topic")
        partitions = column("partition")
        if partitions is not None:
            partitions = [-1 if p is None else p for p in partitions]
        return topics, column("key") or [None] * n, column("value"), partitions, column("headers")

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self._errors.append(f"{msg.topic()}[{msg.partition()}] offset-less record key={msg.key()!r:.60}: {err.str()}")

    def _error(self, err) -> None:
        if err.fatal():
            self._errors.append(f"fatal producer error: {err.str()}")

    # -- step 3/4 ------------------------------------------------------------------------
    def _precommit(self) -> TxnHandle:
        started = time.monotonic()
        producer = self._producer
        remaining = producer.flush(max(30.0, self.config.transaction_timeout_ms / 1000))
        if remaining or self._errors:
            raise KafkaWriteError(
                f"{self.transactional_id}: {remaining} records unacknowledged, delivery errors: "
                f"{self._errors[:5]}; the task fails and its retry fences this attempt")
        seen = len(self._stats)
        deadline = time.monotonic() + 10
        while len(self._stats) == seen and time.monotonic() < deadline:
            producer.poll(0.01)
        stats = json.loads(self._stats[-1]) if self._stats else {}
        partitions = {topic: {p: info["txmsgs"] for p, info in t.get("partitions", {}).items()
                              if p != "-1" and info.get("txmsgs")}
                      for topic, t in stats.get("topics", {}).items()}
        if not self.config.exactly_once:  # at-least-once: flushed is final, nothing to commit
            self._producer = None
            return TxnHandle(sink_partition=self.sink_partition, records=self._records, partitions=partitions,
                             precommit_ms=round((time.monotonic() - started) * 1000, 1))
        eos = stats.get("eos", {})
        if eos.get("producer_id", -1) < 0:
            raise KafkaException(f"{self.transactional_id}: librdkafka statistics gave no producer id/epoch")
        if eos.get("txn_state") not in ("InTransaction", "BeginCommit"):
            raise KafkaWriteError(f"{self.transactional_id}: transaction is {eos.get('txn_state')} after flush "
                                  "(a record failed); the task fails and its retry fences this attempt")
        self._producer = None  # step 5: dropped without abort; the transaction stays Ongoing
        return TxnHandle(sink_partition=self.sink_partition, transactional_id=self.transactional_id,
                         producer_id=eos["producer_id"], producer_epoch=eos["producer_epoch"],
                         records=self._records, partitions=partitions,
                         precommit_ms=round((time.monotonic() - started) * 1000, 1))
