"""The rows of a batch, as the kafka-eos sink would write them, into ``RecordSet``s per output
topic and partition (``verify --recompute``; ``txn.recompute_audit`` compares them).

Invariants:
- A row's topic is the sink's ``topic`` option, else its ``topic`` column (as the sink's
  ``KafkaWriter``). A row with a key goes to the bucket of its partition: its ``partition``
  column when set, else the key's partition as the sink chooses it (``record_partitioner``, over
  the topic's partition count). A row without a key goes to its topic's keyless bucket
  (partition None): its partition was chosen at random.
- Keys and values are hashed as the bytes the sink sends (a string key as UTF-8).
"""
from __future__ import annotations

from typing import Callable, Iterator, Mapping

import numpy as np
import pyarrow as pa
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from kafka_eos.txn.writer.record_partitioner import choose
from kafka_eos.txn.audit.record_set import RecordSet

SETS_SCHEMA = StructType([StructField("topic", StringType(), False), StructField("partition", IntegerType(), True),
                          StructField("records", StringType(), False)])
Buckets = dict[tuple[str, "int | None"], RecordSet]


def _partitions(keys: pa.Array, topics: list, explicit: list, counts: Mapping[str, int],
                partitioner: str) -> list[int | None]:
    """Each row's partition as the sink chooses it; None for a row without a key."""
    out: list[int | None] = [None] * len(keys)
    nulls = keys.is_null().to_numpy(zero_copy_only=False)
    by_topic = np.asarray(topics, dtype=object)
    for name in dict.fromkeys(topics):
        rows = np.flatnonzero(by_topic == name)
        count = counts.get(str(name))
        chosen = choose(keys.take(pa.array(rows)), count, partitioner) if count else None
        for i, r in enumerate(rows.tolist()):
            if nulls[r]:
                continue
            given = explicit[r]
            out[r] = given if given is not None and given >= 0 else (None if chosen is None else int(chosen[i]))
    return out


def add_batch(buckets: Buckets, batch: pa.RecordBatch, topic: str | None, counts: Mapping[str, int],
              partitioner: str) -> None:
    """One Arrow batch of sink rows into ``buckets``."""
    names, n = batch.schema.names, batch.num_rows
    topics = [topic] * n if topic or "topic" not in names else batch.column("topic").to_pylist()
    keys = batch.column("key") if "key" in names else pa.nulls(n, pa.binary())
    explicit = batch.column("partition").to_pylist() if "partition" in names else [None] * n
    headers = batch.column("headers").to_pylist() if "headers" in names else [None] * n
    partitions = _partitions(keys, topics, explicit, counts, partitioner)
    for name, p, key, value, row in zip(topics, partitions, keys.to_pylist(), batch.column("value").to_pylist(),
                                        headers, strict=True):
        buckets.setdefault((str(name), p), RecordSet()).add(key, value, row)


def sets_fn(topic: str | None, counts: Mapping[str, int], partitioner: str) -> Callable[[Iterator[pa.RecordBatch]],
                                                                                         Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function: a task's rows -> one row per bucket (``SETS_SCHEMA``)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        buckets: Buckets = {}
        for batch in batches:
            add_batch(buckets, batch, topic, counts, partitioner)
        yield pa.RecordBatch.from_pydict(
            {"topic": [t for t, _ in buckets], "partition": [p for _, p in buckets],
             "records": [s.text() for s in buckets.values()]},
            schema=pa.schema([("topic", pa.string(), False), ("partition", pa.int32()), ("records", pa.string(), False)]))
    return run


def merge_rows(rows) -> Buckets:
    """The ``SETS_SCHEMA`` rows of every task of a batch -> one bucket map."""
    out: Buckets = {}
    for row in rows:
        out.setdefault((row["topic"], row["partition"]), RecordSet()).merge(RecordSet.parse(row["records"]))
    return out
