"""spark.read.format("kafka-eos") against the real broker: the built-in source's options and
columns, read_committed data only, exact offset bounds."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kafka_eos.connectors import register
from kafka_eos.connectors.schema import source_schema
from integration_tests.kafka_tools import create_topic, produce, read_all, unique


@pytest.fixture(scope="module")
def read(spark, bootstrap):
    register(spark)

    def load(**options):
        reader = spark.read.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()
    return load


def test_batch_reads_exactly_the_committed_records(read, bootstrap):
    topic = create_topic(bootstrap, unique("src-batch"), 2)
    produce(bootstrap, topic, [(b"k%d" % i, b"c%d" % i) for i in range(30)], unique("txn"), True)
    produce(bootstrap, topic, [(b"k", b"aborted")] * 5, unique("txn"), False)
    produce(bootstrap, topic, [(None, b"plain%d" % i) for i in range(7)])
    df = read(subscribe=topic)
    assert df.schema == source_schema(False)
    rows = df.collect()
    oracle = read_all(bootstrap, topic)  # an independent read_committed consumer
    assert sorted((r.partition, r.offset, r.key, r.value) for r in rows) == \
        sorted((m.partition(), m.offset(), m.key(), m.value()) for m in oracle)
    assert len(rows) == 37 and {r.topic for r in rows} == {topic}
    assert {r.timestampType for r in rows} == {0}


def test_headers_ending_offsets_assign_and_min_partitions(read, bootstrap):
    topic = create_topic(bootstrap, unique("src-opts"), 2)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce(topic, value=b"h%d" % i, partition=i % 2, headers=[("id", str(i).encode()), ("none", None)])
    producer.produce(topic, value=b"no-headers", partition=0)
    producer.flush(30)

    df = read(subscribe=topic, includeHeaders="true")
    assert df.schema == source_schema(True)
    by_value = {r.value: r.headers for r in df.collect()}
    assert by_value[b"h3"] == [("id", b"3"), ("none", None)]
    assert by_value[b"no-headers"] is None

    ending = read(subscribe=topic, startingOffsets=f'{{"{topic}": {{"0": 1, "1": -2}}}}',
                  endingOffsets=f'{{"{topic}": {{"0": 4, "1": -1}}}}').collect()
    assert sorted((r.partition, r.offset) for r in ending) == [(0, 1), (0, 2), (0, 3)] + [(1, o) for o in range(5)]

    assigned = read(assign=f'{{"{topic}": [1]}}')
    assert {r.partition for r in assigned.collect()} == {1}

    split = read(subscribe=topic, minPartitions="5")
    assert split.rdd.getNumPartitions() == 5
    assert sorted(r.value for r in split.collect()) == sorted(by_value)


def test_starting_offsets_by_timestamp(read, bootstrap):
    # recent timestamps and no time retention: the broker's retention check must not delete them
    topic = create_topic(bootstrap, unique("src-ts"), 1, config={"retention.ms": "-1"})
    producer = Producer({"bootstrap.servers": bootstrap})
    base = (int(time.time()) - 3600) * 1000
    for i in range(6):
        producer.produce(topic, value=b"t%d" % i, timestamp=base + i * 1000)
    producer.flush(30)
    rows = read(subscribe=topic, startingOffsetsByTimestamp=f'{{"{topic}": {{"0": {base + 3500}}}}}').collect()
    assert [r.value for r in sorted(rows, key=lambda r: r.offset)] == [b"t4", b"t5"]
    assert rows[0].timestamp.timestamp() * 1000 == pytest.approx(base + 4000)
    with pytest.raises(Exception, match="no record at or after"):
        read(subscribe=topic, startingTimestamp=str(base + 10_000)).collect()


def test_empty_and_missing_topics_read_nothing(read, bootstrap):
    topic = create_topic(bootstrap, unique("src-empty"), 3)
    assert read(subscribe=topic).count() == 0
    assert read(subscribe=unique("src-absent")).count() == 0


def test_option_errors_surface_clearly(read, bootstrap):
    with pytest.raises(Exception, match="read_uncommitted would expose"):
        read(subscribe="x", **{"kafka.isolation.level": "read_uncommitted"}).collect()
    with pytest.raises(Exception, match="exactly one of the options subscribe"):
        read(subscribe="x", assign='{"x": [0]}').collect()
