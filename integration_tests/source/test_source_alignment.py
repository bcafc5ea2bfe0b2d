"""Event-time alignment (alignMaxDriftMs) against the real broker and real Spark.

A keyed, skewed topic: partition 0 carries three keys and is dense early in event time, partitions
1 and 2 one key each, uniform. Read with maxOffsetsPerTrigger into a 1-minute windowed count with
a watermark: aligned, every batch's per-partition last records lie within the drift and every
window counts all its input; unaligned, the proportional split runs partitions 1 and 2 ahead and
the watermark drops records of partition 0.
"""
from __future__ import annotations

import json
import time
from collections import Counter

from confluent_kafka import Producer

from kafka_eos.connectors import register
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.source.alignment import SourceAligner
from kafka_eos.offsets import model
from kafka_eos.offsets.kafka_offsets import KafkaOffsets
from kafka_eos.offsets.record_times import RecordTimes
from integration_tests.kafka_tools import create_topic, produce, read_all, unique

MINUTE = 60_000
DRIFT_MS, DELAY = 30_000, "40 seconds"
KEYS = {b"k0": 0, b"k1": 0, b"k2": 0, b"k3": 1, b"k4": 2}


def key_times(key: bytes, base: int) -> list[int]:
    """Partition 0's keys: one record a second for 5 minutes, then one every 10 s; others: 1/s for 10 minutes."""
    if KEYS[key] == 0:
        return [base + s * 1000 for s in range(300)] + [base + s * 1000 for s in range(300, 600, 10)]
    return [base + s * 1000 for s in range(600)]


def produce_skewed(bootstrap: str, topic: str) -> tuple[int, Counter]:
    """Produce every key's records in event-time order (record timestamp = event time); returns
    the number of records and the expected count per 1-minute window start (ms)."""
    base = (int(time.time() * 1000) - 3 * 3_600_000) // MINUTE * MINUTE
    records = sorted((t, key) for key in KEYS for t in key_times(key, base))
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for t, key in records:
        producer.produce(topic, key=key, value=str(t).encode(), partition=KEYS[key], timestamp=t)
        producer.poll(0)
    producer.flush(30)
    return len(records), Counter(t // MINUTE * MINUTE for t, _ in records)


def windowed_count(spark, bootstrap: str, topic: str, checkpoint: str, **options: str):
    """1-minute tumbling counts with a watermark, update mode, Trigger.AvailableNow.
    Returns (final count per window start, rows dropped by the watermark, batches)."""
    from pyspark.sql import functions as F
    register(spark)
    counts: dict[int, int] = {}

    def collect(df, _batch_id):
        for row in df.selectExpr("unix_millis(window.start) AS w", "count").collect():
            counts[row["w"]] = row["count"]

    reader = (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "250"))
    for key, value in options.items():
        reader = reader.option(key, value)
    agg = reader.load().withWatermark("timestamp", DELAY).groupBy(F.window("timestamp", "1 minute")).count()
    query = (agg.writeStream.outputMode("update").foreachBatch(collect).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(600), "stream did not finish"
    finally:
        if query.isActive:
            query.stop()
    dropped = sum(op.get("numRowsDroppedByWatermark", 0) for p in query.recentProgress for op in p["stateOperators"])
    return counts, dropped, len(query.recentProgress)


def planned_batches(checkpoint: str) -> list[tuple[dict, dict]]:
    """(start, end) offsets per partition of every batch in Spark's offset log."""
    reader = CheckpointReader(checkpoint)
    out, previous = [], None
    for batch_id in reader.offset_batches():
        stored = json.loads(reader.offsets(batch_id).sources[-1])
        end = {p: o for (_, p), o in model.decode(stored).items()}
        start = previous if previous is not None else {p: o for (_, p), o in (model.planned_start(stored) or {}).items()}
        out.append((start, end))
        previous = end
    return out


def last_record_spreads(bootstrap: str, topic: str, batches) -> list[int]:
    """Per batch: max - min of the timestamps of each partition's last admitted record."""
    ts = {(m.partition(), m.offset()): m.timestamp()[1] for m in read_all(bootstrap, topic)}
    spreads = []
    for start, end in batches:
        last = [ts[(p, end[p] - 1)] for p in end if end[p] > start.get(p, end[p])]
        spreads.append(max(last) - min(last) if last else 0)
    return spreads


def by_minute(counts, windows) -> list[int]:
    return [counts.get(w, 0) for w in sorted(windows)]


def test_aligned_windows_count_everything_unaligned_drop(spark, bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("src-align"), 3)
    total, expected = produce_skewed(bootstrap, topic)

    aligned_ck = str(tmp_path / "aligned")
    counts, dropped, progress = windowed_count(spark, bootstrap, topic, aligned_ck, alignMaxDriftMs=str(DRIFT_MS))
    batches = [b for b in planned_batches(aligned_ck) if b[0] != b[1]]
    spreads = last_record_spreads(bootstrap, topic, batches)
    print(f"\naligned: {len(batches)} batches, max last-record spread {max(spreads)} ms, dropped {dropped}, "
          f"per window {by_minute(counts, expected)} of {by_minute(expected, expected)}")
    assert max(spreads) <= DRIFT_MS
    assert batches[-1][1] == {0: 990, 1: 600, 2: 600}  # the whole topic, AvailableNow's target
    assert dropped == 0 and counts == dict(expected) and sum(counts.values()) == total

    plain_ck = str(tmp_path / "plain")
    plain, plain_dropped, _ = windowed_count(spark, bootstrap, topic, plain_ck)
    plain_spreads = last_record_spreads(bootstrap, topic, [b for b in planned_batches(plain_ck) if b[0] != b[1]])
    lost = total - sum(plain.values())
    print(f"unaligned: max last-record spread {max(plain_spreads)} ms, dropped {plain_dropped} "
          f"({lost} missing from the windows), per window {by_minute(plain, expected)}")
    assert plain_dropped > 0 and lost > 0 and max(plain_spreads) > DRIFT_MS


def test_head_records_and_round_trips_on_the_broker(bootstrap):
    """Heads skip aborted records and markers; a partition with only aborted records has none;
    one plan costs one head fetch pass and one ListOffsets call."""
    topic = create_topic(bootstrap, unique("src-heads"), 3)
    t0 = (int(time.time() * 1000) - 3_600_000) // 1000 * 1000
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(100):
        producer.produce(topic, value=b"x", partition=0, timestamp=t0 + i * 1000)
        producer.produce(topic, value=b"y", partition=1, timestamp=t0 + 50_000 + i * 1000)
    producer.flush(30)
    produce(bootstrap, topic, [(None, b"aborted")], transactional=unique("txn"), commit=False, partition=2)
    produce(bootstrap, topic, [(None, b"aborted")], transactional=unique("txn"), commit=False, partition=0)
    produce(bootstrap, topic, [(None, b"committed")], transactional=unique("txn"), commit=True, partition=0)

    times = RecordTimes({"bootstrap.servers": bootstrap})
    try:
        heads = times.heads({(topic, 0): 99, (topic, 1): 0, (topic, 2): 0})
        assert heads[(topic, 0)] == (99, t0 + 99_000) and heads[(topic, 1)] == (0, t0 + 50_000)
        assert heads[(topic, 2)] is None
        after = times.heads({(topic, 0): 100})[(topic, 0)]
        assert after is not None and after[0] == 102  # past the aborted record and its marker
    finally:
        times.close()

    kafka = KafkaOffsets({"bootstrap.servers": bootstrap})
    aligner = SourceAligner(10_000, 30_000, kafka, {"bootstrap.servers": bootstrap})
    tps = [(topic, p) for p in range(3)]
    start, latest = {tp: 0 for tp in tps}, kafka.latest(tps)
    took, plans = [], []
    try:
        while start != latest:
            began = time.monotonic()
            ends = aligner.plan(start, latest, latest, None)
            took.append(time.monotonic() - began)
            plans.append(ends)
            assert ends != start and len(plans) < 50
            start = ends
    finally:
        aligner.close()
    print(f"\n{len(plans)} aligned plans: {aligner.lookups}; first {took[0] * 1000:.0f} ms, "
          f"then {sum(took[1:]) / max(1, len(took) - 1) * 1000:.0f} ms on average")
    assert plans[0][(topic, 0)] == 11 and plans[0][(topic, 1)] == 0 and plans[0][(topic, 2)] == latest[(topic, 2)]
    assert aligner.lookups["heads"] == len(plans) and aligner.lookups["offsets_at"] <= len(plans)
