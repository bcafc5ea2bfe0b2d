"""A task's ranges (a group under maxTasksPerBatch) are read in waves of up to four, a consumer
per wave assigned at once (the next wave's opened ahead), each range cut to its offsets and done
by position, a done range's partition unassigned, two ranges of one partition one after the other,
every consumer closed however the task ends."""
from __future__ import annotations

import pytest
from confluent_kafka import Message, TopicPartition

from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.connectors.source.partition_reader import read_messages
from kafka_eos.offsets.ranges import OffsetRange

OPTIONS = parse_source_options({"kafka.bootstrap.servers": "b:1", "subscribe": "in",
                                "kafkaConsumer.pollTimeoutMs": "1000"}, streaming=True)


class Consumer:
    """A partition's log is its record offsets (gaps are transaction markers or aborted records)
    and its end; a consume returns up to ``chunk`` records of each assigned partition in turn."""

    def __init__(self, logs: dict[int, tuple[list[int], int]], chunk: int = 3) -> None:
        self.logs, self.chunk = logs, chunk
        self.assigned: dict[int, int] = {}  # partition -> fetch position
        self.app: dict[int, int] = {}       # partition -> position after what was returned
        self.events: list = []
        self.closed = 0

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            assert tp.partition not in self.assigned, "a partition assigned twice"
            self.assigned[tp.partition] = self.app[tp.partition] = tp.offset
        self.events.append(("assign", sorted((tp.partition, tp.offset) for tp in tps)))

    def incremental_unassign(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            del self.assigned[tp.partition]
        self.events.append(("unassign", sorted(tp.partition for tp in tps)))

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        out: list[Message] = []
        for p, at in list(self.assigned.items()):
            offsets, end = self.logs[p]
            taken = [o for o in offsets if o >= at][: self.chunk]
            out += [Message(topic="in", partition=p, offset=o, value=b"%d" % o) for o in taken]
            self.assigned[p] = self.app[p] = taken[-1] + 1 if taken else end  # markers are skipped
        return out[:num_messages] if len(out) <= num_messages else out

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition("in", tp.partition, self.app[tp.partition]) for tp in tps]

    def close(self) -> None:
        self.closed += 1


def read(consumer: Consumer, ranges: list[OffsetRange]) -> list[tuple[int, int]]:
    batches = read_messages(ranges, OPTIONS, new_consumer=lambda conf: consumer)
    return [(m.partition(), m.offset()) for batch in batches for m in batch]


class Consumers:
    """A fresh consumer per call, all on the same logs; ``events`` in the order they happen."""

    def __init__(self, logs: dict[int, tuple[list[int], int]]) -> None:
        self.logs, self.made, self.events = logs, [], []

    def __call__(self, conf) -> Consumer:
        consumer = Consumer(self.logs)
        consumer.events = self.events
        self.made.append(consumer)
        self.events.append(("open", len(self.made) - 1))
        return consumer


def test_ranges_of_a_task_through_one_consumer_assigned_at_once():
    consumer = Consumer({0: (list(range(20)), 20), 1: (list(range(20)), 20)})
    got = read(consumer, [OffsetRange("in", 0, 2, 9), OffsetRange("in", 1, 5, 7)])
    assert sorted(got) == [(0, o) for o in range(2, 9)] + [(1, 5), (1, 6)]
    assert [o for p, o in got if p == 0] == list(range(2, 9))  # a partition's records in offset order
    assert consumer.events[0] == ("assign", [(0, 2), (1, 5)])
    assert consumer.events.index(("unassign", [1])) < consumer.events.index(("unassign", [0]))
    assert consumer.closed == 1 and consumer.assigned == {}


def test_a_range_ending_on_markers_is_done_by_position():
    consumer = Consumer({0: ([0, 1, 3], 6), 1: (list(range(10)), 10)})  # 2, 4, 5: markers
    got = read(consumer, [OffsetRange("in", 0, 0, 6), OffsetRange("in", 1, 0, 10)])
    assert [o for p, o in got if p == 0] == [0, 1, 3]
    assert ("unassign", [0]) in consumer.events


def test_two_ranges_of_one_partition_one_after_the_other():
    consumers = Consumers({0: (list(range(20)), 20), 1: (list(range(20)), 20)})
    ranges = [OffsetRange("in", 0, 0, 4), OffsetRange("in", 1, 0, 2), OffsetRange("in", 0, 4, 8)]
    got = [(m.partition(), m.offset()) for b in read_messages(ranges, OPTIONS, new_consumer=consumers) for m in b]
    assert [o for p, o in got if p == 0] == list(range(8))
    assigns = [e for e in consumers.events if e[0] == "assign"]
    assert assigns == [("assign", [(0, 0), (1, 0)]), ("assign", [(0, 4)])]
    assert [c.closed for c in consumers.made] == [1, 1]


def test_waves_of_four_ranges_the_next_consumer_opened_ahead():
    consumers = Consumers({p: (list(range(10)), 10) for p in range(10)})
    batches = read_messages([OffsetRange("in", p, 0, 10) for p in range(10)], OPTIONS, new_consumer=consumers)
    got = [(m.partition(), m.offset()) for b in batches for m in b]
    assert sorted(got) == [(p, o) for p in range(10) for o in range(10)]
    assigns = [sorted(p for p, _ in e[1]) for e in consumers.events if e[0] == "assign"]
    assert assigns == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    first_unassign = next(i for i, e in enumerate(consumers.events) if e[0] == "unassign")
    assert consumers.events.index(("open", 1)) < first_unassign  # fetching while wave 0 is read
    assert [c.closed for c in consumers.made] == [1, 1, 1]


def test_a_task_stopped_early_closes_every_consumer():
    consumers = Consumers({p: (list(range(20)), 20) for p in range(6)})
    batches = read_messages([OffsetRange("in", p, 0, 20) for p in range(6)], OPTIONS, new_consumer=consumers)
    next(batches)
    batches.close()  # the task failed or Spark stopped reading
    assert len(consumers.made) == 2 and [c.closed for c in consumers.made] == [1, 1]  # the one opened ahead too


def test_no_consumer_for_a_task_without_records():
    def refuse(conf):
        raise AssertionError("no consumer needed")
    assert list(read_messages([OffsetRange("in", 0, 5, 5)], OPTIONS, new_consumer=refuse)) == []


def test_a_range_without_progress_names_itself():
    consumer = Consumer({0: ([], 0), 1: (list(range(4)), 4)})  # partition 0 never moves
    with pytest.raises(TimeoutError, match=r"in.*0.*stuck at offset 3"):
        read(consumer, [OffsetRange("in", 0, 3, 9), OffsetRange("in", 1, 0, 4)])
    assert consumer.closed == 1
