"""Retention-deleted, reset and vanished offsets: failOnDataLoss=true fails naming topic,
partition and offsets; false warns with the same facts and continues from the earliest offset."""
from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.source.arrow_rows import arrow_schema
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.connectors.source.partition_reader import read_partition
from kafka_eos.connectors.source.planning import KafkaDataLossError, KafkaInputPartition
from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
from integration_tests.kafka_tools import create_topic, produce, unique
from integration_tests.source.test_source_support import run_stream
from kafka_eos.offsets.ranges import OffsetRange
from kafka_eos.connectors.spark_compat import ReadAllAvailable


def values(n: int, start: int = 0) -> list[tuple[None, bytes]]:
    return [(None, b"v%03d" % i) for i in range(start, start + n)]


def delete_below(bootstrap: str, topic: str, offset: int, partition: int = 0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_records([TopicPartition(topic, partition, offset)])[TopicPartition(topic, partition, offset)].result(30)


@pytest.mark.parametrize("fail", [True, False])
def test_stream_resumes_after_retention_deleted_offsets(spark, bootstrap, tmp_path, fail):
    topic = create_topic(bootstrap, unique("src-loss"), 1)
    produce(bootstrap, topic, values(10))
    ck = str(tmp_path / "ck")
    options = dict(subscribe=topic, startingOffsets="earliest", failOnDataLoss=str(fail).lower())
    assert len(run_stream(spark, bootstrap, ck, **options).values()) == 10
    produce(bootstrap, topic, values(10, 10))
    delete_below(bootstrap, topic, 15)  # offsets 10..14 go before the query reads them
    if fail:
        with pytest.raises(Exception) as err:
            run_stream(spark, bootstrap, ck, **options)
        text = str(err.value)
        assert f"topic '{topic}' partition 0" in text and "resume at offset 10" in text
        assert "[15, 20)" in text and "failOnDataLoss=false" in text
    else:
        run = run_stream(spark, bootstrap, ck, **options)
        assert run.values() == [b"v%03d" % i for i in range(15, 20)]


def reader(bootstrap: str, topic: str, fail: bool) -> KafkaStreamReader:
    return KafkaStreamReader({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                              "failOnDataLoss": str(fail).lower()}, source_schema())


def test_driver_warns_with_the_facts(bootstrap, caplog):
    topic = create_topic(bootstrap, unique("src-warn"), 1)
    produce(bootstrap, topic, values(20))
    delete_below(bootstrap, topic, 12)
    start = {"v": 1, "topics": {topic: {"0": 4}}}
    with caplog.at_level(logging.WARNING, logger="kafka_eos.connectors.source"):
        end = reader(bootstrap, topic, fail=False).latestOffset(start, ReadAllAvailable())
    assert end == {"v": 1, "topics": {topic: {"0": 20}}, "tasks": 1}  # one range: one task
    [warning] = [r.getMessage() for r in caplog.records if "data loss" in r.getMessage()]
    assert f"'{topic}' partition 0" in warning and "resume at offset 4" in warning
    assert "[12, 20)" in warning and "continuing from offset 12" in warning
    with pytest.raises(KafkaDataLossError, match=r"resume at offset 4.*\[12, 20\)"):
        reader(bootstrap, topic, fail=True).latestOffset(start, ReadAllAvailable())


def test_driver_offsets_went_backwards_and_partition_gone(bootstrap, caplog):
    topic = create_topic(bootstrap, unique("src-reset"), 1)
    produce(bootstrap, topic, values(3))
    ahead = {"v": 1, "topics": {topic: {"0": 50}, "vanished-topic": {"0": 7}}}
    with caplog.at_level(logging.WARNING, logger="kafka_eos.connectors.source"):
        source = reader(bootstrap, topic, fail=False)
        end = source.latestOffset(ahead, ReadAllAvailable())
        assert end == {"v": 1, "topics": {topic: {"0": 0}}, "tasks": 1}  # restart the partition at its earliest offset
        assert source.latestOffset(end, ReadAllAvailable()) == {"v": 1, "topics": {topic: {"0": 3}}, "tasks": 1}
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "went backwards" in text and "'vanished-topic' partition 0" in text and "no longer exists" in text
    with pytest.raises(KafkaDataLossError, match="went backwards"):
        reader(bootstrap, topic, fail=True).latestOffset(ahead, ReadAllAvailable())


@pytest.mark.parametrize("fail", [True, False])
def test_executor_read_when_offsets_vanish_after_planning(bootstrap, caplog, fail):
    topic = create_topic(bootstrap, unique("src-exec"), 1)
    produce(bootstrap, topic, values(10))
    delete_below(bootstrap, topic, 6)  # planned range [2, 10) but 2..5 are gone at read time
    options = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                    "failOnDataLoss": str(fail).lower()}, streaming=True)
    partition = KafkaInputPartition(OffsetRange(topic, 0, 2, 10))
    read = lambda: [r for b in read_partition(partition, options, arrow_schema(source_schema())) for r in b.to_pylist()]  # noqa: E731
    if fail:
        with pytest.raises(KafkaDataLossError, match=rf"'{topic}' partition 0.*offset 2.*\[6, 10\)"):
            read()
    else:
        with caplog.at_level(logging.WARNING, logger="kafka_eos.connectors.source"):
            rows = read()
        assert [r["offset"] for r in rows] == [6, 7, 8, 9]
        assert any("continuing from offset 6" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("fail", [True, False])
def test_batch_read_from_deleted_offsets(spark, bootstrap, fail):
    from kafka_eos.connectors import register
    register(spark)
    topic = create_topic(bootstrap, unique("src-bloss"), 1)
    produce(bootstrap, topic, values(10))
    delete_below(bootstrap, topic, 7)
    df = (spark.read.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", f'{{"{topic}": {{"0": 3}}}}').option("failOnDataLoss", str(fail).lower()).load())
    if fail:
        with pytest.raises(Exception, match=r"resume at offset 3.*\[7, 10\)"):
            df.collect()
    else:
        assert sorted(r.offset for r in df.collect()) == [7, 8, 9]
