"""Helpers for the source integration tests (no tests here): streams collected per batch id."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from confluent_kafka import Producer

from kafka_eos.connectors import register


@dataclass
class StreamRun:
    """What one availableNow run of the kafka-eos stream delivered, keyed by batch id."""
    batches: dict[int, list[tuple]] = field(default_factory=dict)
    progress: list[dict] = field(default_factory=list)

    def rows(self) -> list[tuple]:
        return [row for batch_id in sorted(self.batches) for row in self.batches[batch_id]]

    def values(self) -> list[bytes]:
        return [row[3] for row in self.rows()]

    def by_partition(self) -> dict[int, list[bytes]]:
        out: dict[int, list[bytes]] = {}
        for _topic, partition, _offset, value in self.rows():
            out.setdefault(partition, []).append(value)
        return out

    def admitted(self) -> list[int]:
        """Offsets admitted per batch (end - start over all partitions), from query progress."""
        def topics(text) -> dict:
            parsed = json.loads(text) if isinstance(text, str) else text
            return (parsed or {}).get("topics", {})

        out = []
        for p in self.progress:
            start, end = topics(p["sources"][0]["startOffset"]), topics(p["sources"][0]["endOffset"])
            out.append(sum(o - start.get(t, {}).get(part, o) for t, parts in end.items() for part, o in parts.items()))
        return out


def run_stream(spark, bootstrap: str, checkpoint: str, *, sink_error_in_batch: int | None = None,
               run: StreamRun | None = None, timeout_s: float = 180, **options: str) -> StreamRun:
    """Run ``format("kafka-eos")`` with Trigger.AvailableNow into a foreachBatch collector.

    ``sink_error_in_batch`` makes the sink fail in that batch after recording its rows (the
    query then stops with an error, the way a crash after reading would).
    """
    register(spark)
    run = run or StreamRun()

    def collect(df, batch_id):
        rows = [tuple(r) for r in df.select("topic", "partition", "offset", "value").collect()]
        run.batches[batch_id] = rows
        if batch_id == sink_error_in_batch:
            raise RuntimeError(f"injected sink failure in batch {batch_id}")

    reader = spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load().writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(timeout_s), f"stream did not finish in {timeout_s}s"
    finally:
        run.progress.extend(p for p in query.recentProgress if p["batchId"] not in {q["batchId"] for q in run.progress})
        if query.isActive:
            query.stop()
    return run


def open_transaction(bootstrap: str, txn_id: str, topic: str, partition: int, values: list[bytes]) -> Producer:
    """Produce ``values`` in a transaction left open; the caller commits or aborts it."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value, partition=partition)
    producer.flush(30)
    return producer
