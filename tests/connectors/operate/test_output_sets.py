"""Sink rows -> record sets per output partition (pure logic on Arrow batches)."""
from __future__ import annotations

import random

import pyarrow as pa

from kafka_eos.connectors.operate.output_sets import add_batch, merge_rows, sets_fn
from kafka_eos.txn.audit.record_set import RecordSet
from kafka_eos.txn.writer.write_evidence import TaskEvidence


def test_keyed_rows_go_to_the_partition_the_sink_chooses_and_keyless_ones_to_their_topic():
    keys = pa.array([b"k%d" % i for i in range(200)] + [None, None], pa.binary())
    values = pa.array([b"v%d" % i for i in range(202)], pa.binary())
    batch = pa.RecordBatch.from_arrays([keys, values], ["key", "value"])
    evidence = TaskEvidence("murmur2_random", lambda topic: 5, random.Random(1))
    ordered, _, placed = evidence.place(batch, ["out"] * 202, None)
    expected: dict = {}
    for key, value, p in zip(ordered.column("key").to_pylist(), ordered.column("value").to_pylist(), placed,
                             strict=True):
        expected.setdefault(("out", None if key is None else p), RecordSet()).add(key, value, None)
    buckets: dict = {}
    add_batch(buckets, batch, "out", {"out": 5}, "murmur2_random")
    assert buckets == expected and buckets[("out", None)].records == 2


def test_a_topic_column_and_a_partition_column_win_as_in_the_sink():
    batch = pa.RecordBatch.from_pydict({"key": ["a", "b", None], "value": [b"1", b"2", b"3"],
                                        "topic": ["x", "y", "y"], "partition": [3, None, 1]})
    buckets: dict = {}
    add_batch(buckets, batch, None, {"x": 4, "y": 2}, "murmur2")
    assert set(buckets) == {("x", 3), ("y", 1 if _murmur_of(b"b", 2) else 0), ("y", None)}
    rows = next(sets_fn(None, {"x": 4, "y": 2}, "murmur2")(iter([batch]))).to_pylist()
    assert merge_rows(rows) == buckets


def _murmur_of(key: bytes, count: int) -> int:
    from kafka_eos.txn.writer.record_partitioner import choose
    chosen = choose(pa.array([key], pa.binary()), count, "murmur2")
    assert chosen is not None
    return int(chosen[0])

