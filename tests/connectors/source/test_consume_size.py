"""A consume asks for about BATCH_BYTES of records: the record size comes from a sample of the
previous consume, so 1 KB records come 2,000 at a time and 100 B records 20,000 at a time."""
from __future__ import annotations

from confluent_kafka import Message, TopicPartition

from kafka_eos.connectors.source import partition_reader
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.connectors.source.partition_reader import read_messages
from kafka_eos.offsets.ranges import OffsetRange

OPTIONS = parse_source_options({"kafka.bootstrap.servers": "b:1", "subscribe": "in"}, streaming=True)


class Consumer:
    """One partition of ``end`` records of ``size`` bytes (key 10 B of them); records what each consume asked."""

    def __init__(self, end: int, size: int) -> None:
        self.end, self.size, self.at, self.asked = end, size, 0, []

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        self.at = tps[0].offset

    def incremental_unassign(self, tps: list[TopicPartition]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        self.asked.append(num_messages)
        taken = range(self.at, min(self.end, self.at + num_messages))
        self.at = taken.stop
        return [Message(topic="in", partition=0, offset=o, key=b"k" * 10, value=b"v" * (self.size - 10)) for o in taken]

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition("in", 0, self.at)]

    def close(self) -> None:
        pass


def asked(records: int, size: int) -> list[int]:
    consumer = Consumer(records, size)
    read = sum(len(b) for b in read_messages([OffsetRange("in", 0, 0, records)], OPTIONS, lambda conf: consumer))
    assert read == records
    return consumer.asked


def test_1kb_records_come_2000_at_a_time_after_the_first_consume():
    assert asked(30_000, 1_000) == [20_000, 2_000, 2_000, 2_000, 2_000, 2_000]


def test_100b_records_come_20000_at_a_time():
    assert asked(50_000, 100) == [20_000, 20_000, 10_000]


def test_the_size_is_a_sample_of_the_last_consume():
    big = [Message(topic="in", partition=0, offset=o, value=b"v" * 10_000) for o in range(100)]
    assert partition_reader._record_bytes(big) == 10_000
    assert partition_reader._record_bytes([]) == 0
    mixed = [Message(topic="in", partition=0, offset=o, value=None if o % 2 else b"v" * 100) for o in range(100)]
    assert 0 < partition_reader._record_bytes(mixed) <= 100
