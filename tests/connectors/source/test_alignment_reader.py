"""The stream reader's alignment memory: caught-up partitions hold others until idle (fakes, no broker)."""
from kafka_eos.connectors.source.alignment import SourceAligner

A, B, C = ("t", 0), ("t", 1), ("t", 2)
LOGS = {A: list(range(200, 300)), B: list(range(210, 300)), C: [100]}


class FakeTimes:
    polls = 0

    def heads(self, starts):
        return {tp: next(((o, t) for o, t in enumerate(LOGS[tp]) if o >= s), None) for tp, s in starts.items()}

    def close(self):
        pass


class FakeKafka:
    def for_times(self, times):
        return {tp: next((o for o, t in enumerate(LOGS[tp]) if t >= ts), None) for tp, ts in times.items()}


def aligner(idle_ms=30_000):
    a = SourceAligner(10, idle_ms, FakeKafka(), {"bootstrap.servers": "unused:9092"})
    a._times = FakeTimes()
    return a


def test_caught_up_partition_holds_all_but_the_slowest_until_idle():
    ends = {tp: len(log) for tp, log in LOGS.items()}
    a = aligner()
    assert a.plan({A: 0, B: 0, C: 0}, ends, ends, None) == {A: 0, B: 0, C: 1}  # C is the slowest (100)
    assert a.plan({A: 0, B: 0, C: 1}, ends, ends, None) == {A: 11, B: 0, C: 1}  # C caught up, seen at 100
    assert a.lookups == {"heads": 2, "polls": 0, "offsets_at": 2}
    idle = aligner(idle_ms=0)
    assert idle.plan({A: 0, B: 0, C: 1}, ends, ends, None) == {A: 11, B: 1, C: 1}


def test_available_now_target_reached_is_idle_at_once():
    ends = {tp: len(log) for tp, log in LOGS.items()}
    a = aligner()
    a.plan({A: 0, B: 0, C: 0}, ends, ends, ends)
    assert a.plan({A: 0, B: 0, C: 1}, ends, ends, ends) == {A: 11, B: 1, C: 1}
