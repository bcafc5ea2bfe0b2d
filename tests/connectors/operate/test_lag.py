"""Lag from a committed position and the brokers' ends, read on a timer: records behind, the age of
the oldest unread record, and the last commit's time (pure functions, and the sampler on a real
checkpoint and sink log with the broker reads passed in)."""
from __future__ import annotations

import json
from pathlib import Path

from kafka_eos.connectors.operate.lag import CommitClock, PartitionLag, WaitClock, records_behind, source_lag
from kafka_eos.connectors.operate.lag_sampler import LagSampler, committed_position, last_commit_s
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog

A, B = ("in", 0), ("in", 1)


def checkpoint(root: Path, ends: dict[int, dict[str, int]], committed: list[int]) -> str:
    """A Spark checkpoint whose offset log holds ``ends`` (batch -> partition -> end) and whose
    commit log holds ``committed``."""
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(exist_ok=True)
    for batch, parts in ends.items():
        (root / "offsets" / str(batch)).write_text('v1\n{"batchWatermarkMs":0}\n' +
                                                   json.dumps({"v": 1, "topics": {"in": parts}}))
    for batch in committed:
        (root / "commits" / str(batch)).write_text("v1\n{}")
    return str(root)


def committed(log: SinkLog, batch: int, at_ms: float) -> None:
    """Batch ``batch`` decided, then committed at ``at_ms``, as the protocol records it."""
    decided = log.append(BatchRecord(batch, DECIDED, 1, (), {}), None)
    log.append(BatchRecord(batch, COMMITTED, 1, (), {}, {"committed_at_ms": at_ms}), decided)


def test_records_behind_and_the_oldest_unread_records_age():
    assert records_behind({A: 10, B: 5}, {A: 14, B: 5, ("in", 2): 9}) == {A: 4, B: 0}
    assert records_behind({A: 10}, {A: 8}) == {A: 0}, "never negative (an end read before a commit)"
    lag = source_lag({A: 10, B: 5}, {A: 14, B: 5}, {A: (10, 40_000), B: (5, 1)}, now_ms=100_000)
    assert lag == {A: PartitionLag(4, 60.0), B: PartitionLag(0, 0.0)}, "a partition not behind has age 0"
    assert source_lag({A: 10}, {A: 14}, {A: None}, 100_000) == {A: PartitionLag(4, 0.0)}, \
        "only aborted records or markers unread: none waits"
    assert source_lag({A: 10}, {}, {}, 100_000) == {}, "an end not read: the partition is left out"


def test_the_commit_clock_prefers_the_recorded_time_and_never_reports_earlier_than_the_truth():
    clock = CommitClock()
    assert clock.observe(None, None, 100.0) is None, "nothing committed yet"
    assert clock.observe(3, None, 100.0) == 100.0, "first seen now"
    assert clock.observe(3, None, 160.0) == 100.0, "the same batch: still the time it was first seen"
    assert clock.observe(4, None, 170.0) == 170.0
    assert clock.observe(4, 165.5, 180.0) == 165.5, "a recorded commit time wins"


def test_input_waits_from_the_later_of_the_last_commit_and_the_first_sample_that_saw_it():
    clock = WaitClock()
    assert clock.observe(0, 100.0, 110.0) == 0.0, "nothing behind: nothing waits"
    assert clock.observe(5, 100.0, 400.0) == 0.0, "input after an idle spell waits from when it was seen"
    assert clock.observe(9, 100.0, 430.0) == 30.0, "a stall: it grows"
    assert clock.observe(4, 425.0, 435.0) == 10.0, "a commit since: it waits from that commit"
    assert clock.observe(0, 440.0, 445.0) == 0.0
    assert clock.observe(3, None, 500.0) == 0.0 and clock.observe(3, None, 512.5) == 12.5, "no commit known"


def test_the_position_is_the_last_committed_batchs_end(tmp_path):
    location = checkpoint(tmp_path / "ck", {0: {"0": 10, "1": 4}, 1: {"0": 25, "1": 9}}, [0])
    assert committed_position(location) == (0, {A: 10, B: 4}), "batch 1 is planned, not committed"
    assert committed_position(str(tmp_path / "none")) is None, "no checkpoint: no position (and nothing made)"
    assert not (tmp_path / "none").exists()


def test_the_last_commit_time_is_the_newest_committed_record_of_the_sink_log(tmp_path):
    log = SinkLog(str(tmp_path / "log"), "p")
    assert last_commit_s(str(tmp_path / "log")) is None
    committed(log, 0, 1_700_000_000_000.0)
    log.append(BatchRecord(1, DECIDED, 1, (), {}), None)   # decided, not committed: not a commit
    assert last_commit_s(str(tmp_path / "log")) == 1_700_000_000.0


def test_a_stalled_pipelines_lag_grows_between_samples_while_no_batch_commits(tmp_path):
    """The sampler reads the ends at each sample: with the position still, the records behind and
    the oldest unread record's age grow, the last commit time stands still."""
    location = checkpoint(tmp_path / "ck", {0: {"0": 10, "1": 4}}, [0])
    log = SinkLog(str(tmp_path / "log"), "p")
    committed(log, 0, 1_000_000.0)
    ends = iter([{A: 10, B: 4}, {A: 30, B: 4}, {A: 50, B: 7}])
    asked: list[dict] = []
    now = iter([1_010.0, 1_040.0, 1_070.0])

    def heads(starts):
        asked.append(dict(starts))
        return {tp: (offset, 1_015_000) for tp, offset in starts.items()}
    sampler = LagSampler(location, str(tmp_path / "log"), lambda tps: next(ends), heads, clock=lambda: next(now))
    first, second, third = sampler.sample(), sampler.sample(), sampler.sample()
    assert first.partitions == {A: PartitionLag(0, 0.0), B: PartitionLag(0, 0.0)} and first.committed_batch == 0
    assert second.partitions[A] == PartitionLag(20, 25.0)
    assert third.partitions == {A: PartitionLag(40, 55.0), B: PartitionLag(3, 55.0)}
    assert first.last_commit_s == second.last_commit_s == third.last_commit_s == 1_000.0
    assert (first.waiting_s, second.waiting_s, third.waiting_s) == (0.0, 0.0, 30.0)
    assert asked == [{A: 10}, {A: 10, B: 4}], "heads are read at the position, only for partitions behind"


def test_no_committed_batch_asks_no_broker(tmp_path):
    def refuse(*_):
        raise AssertionError("asked a broker")
    facts = LagSampler(str(tmp_path / "ck"), None, refuse, refuse).sample()
    assert (facts.partitions, facts.committed_batch, facts.last_commit_s) == ({}, None, None)


def test_a_hung_source_leader_answers_from_the_ends_last_read_and_counts_as_failed(tmp_path):
    """Ends never go back: with the brokers' reads failing, what waited at the last answer still
    waits while the position stands, so a pipeline stalled behind a hung leader shows input waiting
    (and its first unread record ageing); the facts carry the error, which the gauges count."""
    from kafka_eos.connectors.operate.metric_table import MONITORED, register
    from kafka_eos.connectors.operate.probe_gauges import ProbeGauges
    from kafka_eos.offsets.kafka_offsets import KafkaLookupError
    from prometheus_client import CollectorRegistry
    location = checkpoint(tmp_path / "ck", {0: {"0": 10, "1": 4}}, [0])
    answers = iter([{A: 15, B: 4}, KafkaLookupError("leader of in-0 hung"), KafkaLookupError("still hung")])
    now = iter([100.0, 130.0, 160.0])

    def ends(_tps):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer
    sampler = LagSampler(location, None, ends, lambda starts: {A: (10, 95_000)}, clock=lambda: next(now))
    facts = [sampler.sample() for _ in range(3)]
    assert [f.error is None for f in facts] == [True, False, False]
    assert [f.partitions[A] for f in facts] == [PartitionLag(5, 5.0), PartitionLag(5, 35.0), PartitionLag(5, 65.0)]
    assert [f.waiting_s for f in facts] == [0.0, 30.0, 60.0], "the commit clock starts at the first sample here"
    registry = CollectorRegistry()
    gauges = ProbeGauges(register(registry, MONITORED), "p", "monitor")
    gauges.lag(facts[0])
    gauges.lag(facts[2])
    labels = {"pipeline": "p", "exporter": "monitor"}
    assert registry.get_sample_value("kafka_eos_input_waiting_seconds", labels) == 60.0
    assert registry.get_sample_value("kafka_eos_probe_failures_total", {**labels, "probe": "lag"}) == 1


def test_a_batch_committed_while_the_brokers_are_slow_to_answer_is_not_taken_for_waiting_input(tmp_path):
    """Issue 64: with a broker down the ends' lookup may take its timeout (25 s here); the pipeline
    commits batch 1 meanwhile. The commit and the position are read after the lookup, so the input
    has not waited 25 s: a failover during which batches commit does not look like a stall."""
    location = checkpoint(tmp_path / "ck", {0: {"0": 10, "1": 4}}, [0])
    log = SinkLog(str(tmp_path / "log"), "p")
    committed(log, 0, 100_000.0)
    now = [100.0]

    def slow_ends(_tps):
        now[0] += 25.0                                        # the lookup waits out a dead broker
        checkpoint(tmp_path / "ck", {1: {"0": 20, "1": 4}}, [1])
        committed(log, 1, 124_000.0)                          # batch 1 committed meanwhile
        return {A: 22, B: 4}
    sampler = LagSampler(location, str(tmp_path / "log"), slow_ends, lambda starts: {A: (20, 124_500)},
                         clock=lambda: now[0])
    sampler.waits.observe(5, 100.0, 100.0)                    # input seen waiting at the last commit
    facts = sampler.sample()
    assert facts.committed_batch == 1 and facts.last_commit_s == 124.0
    assert facts.waiting_s == 1.0 and facts.partitions[A] == PartitionLag(2, 0.5)
