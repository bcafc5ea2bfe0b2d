"""The executor read against the real broker: ranges ending on transaction markers and
aborted records stop at the range end (by consumer position), never past it, never skipping."""
from __future__ import annotations

import time

import pytest

from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.source.arrow_rows import arrow_schema
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.connectors.source.partition_reader import read_partition
from kafka_eos.connectors.source.planning import KafkaInputPartition
from integration_tests.kafka_tools import committed_end_offsets, create_topic, produce, unique
from kafka_eos.offsets.ranges import OffsetRange

SCHEMA = arrow_schema(source_schema())


def read_range(bootstrap: str, topic: str, start: int, end: int) -> list[tuple[int, bytes]]:
    options = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                    "kafkaConsumer.pollTimeoutMs": "10000"}, streaming=True)
    batches = read_partition(KafkaInputPartition(OffsetRange(topic, 0, start, end)), options, SCHEMA)
    return [(r["offset"], r["value"]) for b in batches for r in b.to_pylist()]


@pytest.fixture(scope="module")
def marker_topic(bootstrap):
    """c0 c1 [commit] a0 a1 [abort] n0 c2 [commit] a2 [abort]: offsets 0..10, LSO 11."""
    topic = create_topic(bootstrap, unique("src-markers"), 1)
    txn = unique("txn")
    produce(bootstrap, topic, [(None, b"c0"), (None, b"c1")], txn, True)
    produce(bootstrap, topic, [(None, b"a0"), (None, b"a1")], txn, False)
    produce(bootstrap, topic, [(None, b"n0")])
    produce(bootstrap, topic, [(None, b"c2")], txn, True)
    produce(bootstrap, topic, [(None, b"a2")], txn, False)
    assert committed_end_offsets(bootstrap, topic) == {0: 11}
    return topic


def test_range_ending_in_abort_marker_stops_promptly(bootstrap, marker_topic):
    started = time.monotonic()
    assert read_range(bootstrap, marker_topic, 0, 11) == [(0, b"c0"), (1, b"c1"), (6, b"n0"), (7, b"c2")]
    assert time.monotonic() - started < 5  # stopped by position, not by the poll timeout


@pytest.mark.parametrize("start, end, expected", [
    (2, 3, []),                 # only the commit marker
    (3, 6, []),                 # only aborted records and their abort marker
    (8, 11, []),                # commit marker, aborted record, abort marker
    (0, 3, [0, 1]),             # ends right after a commit marker
    (5, 7, [6]),                # starts on an abort marker
    (7, 8, [7]),                # the range end is the next record's marker
])
def test_ranges_on_markers(bootstrap, marker_topic, start, end, expected):
    assert [o for o, _ in read_range(bootstrap, marker_topic, start, end)] == expected


def test_every_split_point_gives_the_same_records(bootstrap, marker_topic):
    whole = read_range(bootstrap, marker_topic, 0, 11)
    for cut in range(0, 12, 2):
        assert read_range(bootstrap, marker_topic, 0, cut) + read_range(bootstrap, marker_topic, cut, 11) == whole


def test_large_range_in_arrow_batches(bootstrap):
    topic = create_topic(bootstrap, unique("src-large"), 1)
    produce(bootstrap, topic, [(b"%d" % i, b"x" * 100) for i in range(60_000)])
    got = read_range(bootstrap, topic, 100, 59_990)
    assert [o for o, _ in got] == list(range(100, 59_990))


def test_a_group_of_ranges_reads_what_its_ranges_read_alone(bootstrap):
    """maxTasksPerBatch: one consumer reads a task's ranges, among them two of one partition, on
    transactional input of three partitions; each range gives exactly what it gives alone."""
    topic = create_topic(bootstrap, unique("src-group"), 3)
    txn = unique("txn")
    for p in range(3):
        produce(bootstrap, topic, [(None, b"c%d-%d" % (p, i)) for i in range(40)], txn, True, partition=p)
        produce(bootstrap, topic, [(None, b"a%d" % p)] * 7, txn, False, partition=p)
        produce(bootstrap, topic, [(None, b"n%d-%d" % (p, i)) for i in range(3)], partition=p)
    ends = committed_end_offsets(bootstrap, topic)
    ranges = [OffsetRange(topic, 0, 0, 20), OffsetRange(topic, 1, 3, ends[1]), OffsetRange(topic, 2, 41, ends[2]),
              OffsetRange(topic, 0, 20, ends[0])]
    options = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                    "kafkaConsumer.pollTimeoutMs": "10000"}, streaming=True)
    alone = {r: [(x["partition"], x["offset"]) for b in read_partition(KafkaInputPartition(r), options, SCHEMA)
                 for x in b.to_pylist()] for r in ranges}
    started = time.monotonic()
    grouped = [(x["partition"], x["offset"]) for b in read_partition(KafkaInputPartition(tuple(ranges)), options, SCHEMA)
               for x in b.to_pylist()]
    assert time.monotonic() - started < 5  # every range done by position, none by the poll timeout
    assert sorted(grouped) == sorted(sum(alone.values(), []))
    assert len(grouped) == 20 + (37 + 3) + 3 + (20 + 3)  # committed and plain records only, none twice
    assert [o for p, o in grouped if p == 0] == sorted(o for p, o in grouped if p == 0)
