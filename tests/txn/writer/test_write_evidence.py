"""TaskEvidence: each row's partition and each partition's digest, all or nothing."""
from __future__ import annotations

import random

import pyarrow as pa
from kafka.partitioner.default import murmur2 as java_murmur2

from kafka_eos.txn.writer.record_digest import PartitionDigest
from kafka_eos.txn.writer.records import Records
from kafka_eos.txn.writer.write_evidence import TaskEvidence


def _digest(rows) -> str:
    d = PartitionDigest()
    for key, value in rows:
        d.add_record(key, value, None)
    return d.hexdigest()


def test_rows_go_where_murmur2_or_the_partition_column_says_grouped_and_each_partition_is_digested():
    counts = {"a": 4, "b": 2}
    evidence = TaskEvidence("murmur2_random", counts.get, random.Random(1))
    keys, values = [b"k%d" % i for i in range(6)], [b"v%d" % i for i in range(6)]
    batch = pa.RecordBatch.from_pydict({"key": keys, "value": values})
    topics, explicit = ["a", "b", "a", "b", "a", "a"], [-1, -1, 3, -1, -1, -1]
    out, out_topics, placed = evidence.place(batch, topics, explicit)
    where = {k: (t, 3 if p == 3 else (java_murmur2(k) & 0x7FFFFFFF) % counts[t])
             for k, t, p in zip(keys, topics, explicit, strict=True)}
    produced = list(zip(out.column("key").to_pylist(), out_topics, placed, strict=True))
    assert sorted(produced) == sorted((k, t, p) for k, (t, p) in where.items())
    assert [(t, p) for _, t, p in produced] == sorted((t, p) for _, t, p in produced), "grouped by topic, partition"
    groups: dict = {}
    for key, value in zip(keys, values, strict=True):  # the input order within each partition
        topic, partition = where[key]
        groups.setdefault(topic, {}).setdefault(str(partition), []).append((key, value))
    assert evidence.counts() == {t: {p: len(rows) for p, rows in ps.items()} for t, ps in groups.items()}
    assert evidence.digests() == {t: {p: _digest(rows) for p, rows in ps.items()} for t, ps in groups.items()}


def test_records_a_task_read_itself_are_digested_like_arrow_rows():
    arrow, records = TaskEvidence("murmur2", lambda t: 3), TaskEvidence("murmur2", lambda t: 3)
    keys, values = [b"x", None, b"zz"], [b"1", b"2", None]
    arrow.place(pa.RecordBatch.from_pydict({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())}),
                ["t"] * 3, None)
    records.place(Records(keys, values, None), ["t"] * 3, None)
    assert arrow.digests() == records.digests() and arrow.complete


def test_a_partitioner_or_topic_it_cannot_predict_leaves_no_evidence_and_librdkafka_chooses():
    unpredictable = TaskEvidence("consistent_random", lambda t: 3)
    assert unpredictable.place(Records([b"a"], [b"1"]), ["t"], None)[2] == [-1]
    assert not unpredictable.complete and unpredictable.digests() == {} and "consistent_random" in unpredictable.reason
    unknown = TaskEvidence("murmur2_random", lambda t: None)
    assert unknown.place(Records([b"a"], [b"1"]), ["t"], None)[2] == [-1] and unknown.digests() == {}
    assert unknown.place(Records([b"b"], [b"2"]), ["t"], None)[2] == [-1], "once incomplete, it stays out of the way"


def test_regrouped_rows_keep_each_key_with_its_value_and_headers_and_carry_only_what_is_produced():
    evidence = TaskEvidence("murmur2", {"t": 8}.get)
    n = 40
    keys, values = [b"k%d" % i for i in range(n)], [b"v%d" % i * 50 for i in range(n)]
    headers = [[{"key": "h", "value": b"%d" % i}] if i % 3 else None for i in range(n)]
    batch = pa.RecordBatch.from_pydict({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": pa.array(["t"] * n), "offset": pa.array(range(n), pa.int64()),
        "headers": pa.array(headers, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))})
    out, _, placed = evidence.place(batch, ["t"] * n, None)
    assert out.schema.names == ["key", "value", "headers"], "the rows' other columns are not copied"
    assert len(set(placed)) > 1 and placed == sorted(placed), "regrouped by partition"
    row_of = {k: i for i, k in enumerate(keys)}
    for key, value, header in zip(*(out.column(c).to_pylist() for c in ("key", "value", "headers")), strict=True):
        assert (value, header) == (values[row_of[key]], headers[row_of[key]])


def test_timestamps_are_digested_per_partition_and_only_when_every_record_has_one():
    from kafka_eos.txn.writer.record_digest import TimestampDigest
    evidence = TaskEvidence("murmur2", lambda t: 2)
    keys = [b"a", b"b", b"c", b"d"]
    batch = pa.RecordBatch.from_pydict({"key": keys, "value": [b"1", b"2", b"3", b"4"],
                                        "timestamp": pa.array([10, 20, 30, 40], pa.int64())})
    out, _, placed = evidence.place(batch, ["t"] * 4, None)
    if "timestamp" in out.schema.names:  # regrouped: each row keeps its own timestamp
        assert dict(zip(out.column("key").to_pylist(), out.column("timestamp").to_pylist(), strict=True)) == \
            dict(zip(keys, [10, 20, 30, 40], strict=True))
    want: dict = {}
    for key, ts in zip(keys, [10, 20, 30, 40], strict=True):
        want.setdefault(str((java_murmur2(key) & 0x7FFFFFFF) % 2), TimestampDigest()).add_record(ts)
    assert evidence.timestamp_digests() == {"t": {p: d.hexdigest() for p, d in sorted(want.items())}}
    records = TaskEvidence("murmur2", lambda t: 2)
    records.place(Records(keys, [b"1", b"2", b"3", b"4"], timestamps=[10, 20, 30, 40]), ["t"] * 4, None)
    assert records.timestamp_digests() == evidence.timestamp_digests(), "a copy's records: the same digests"
    evidence.place(pa.RecordBatch.from_pydict({"key": [b"e"], "value": [b"5"]}), ["t"], None)
    assert evidence.timestamp_digests() == {} and evidence.digests(), "one batch stamped by librdkafka: none"
