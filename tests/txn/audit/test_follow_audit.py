"""FollowAudit: batches judged in order as their output arrives, over scans kept open (pure logic)."""
from __future__ import annotations

from kafka_eos.txn.audit.follow_audit import Pending, judge_round, unanchor
from kafka_eos.txn.audit.output_audit import FAILED, PASSED, PartitionScan
from tests.txn.audit.test_output_audit import data, handle, marker

NOW = 1_000_000


def open_scan() -> dict:
    return {("out", 0): PartitionScan("out", 0, 0, 0, keep_all=True)}


def add(scans: dict, *batches) -> None:
    for b in batches:
        scans[("out", 0)].add(b, set())


def pending(batch_id: int, pid: int, offsets, committed_at: int = NOW) -> Pending:
    return Pending(batch_id, (handle(pid, offsets),), committed_at)


def test_a_batch_waits_for_its_commit_marker_then_passes_and_leaves_the_scan():
    scans = open_scan()
    add(scans, data(1, range(0, 3)))
    batch = pending(0, 1, range(0, 3))
    assert judge_round([batch], scans, NOW + 1000) == [], "markers not read yet: the batch waits"
    add(scans, marker(1, 3))
    [verdict] = judge_round([batch], scans, NOW + 1000)
    assert verdict.outcome == PASSED and verdict.records == 3
    assert scans[("out", 0)].found == {}, "a judged batch's part is forgotten"


def test_judged_batches_stay_a_prefix_of_the_committed_ones():
    scans = open_scan()
    add(scans, data(1, range(0, 2)), marker(1, 2), data(2, range(3, 5)))  # batch 1's marker not read yet
    add(scans, data(3, range(5, 6)), marker(3, 6))
    batches = [pending(0, 1, range(0, 2)), pending(1, 2, range(3, 5)), pending(2, 3, range(5, 6))]
    assert [v.batch_id for v in judge_round(batches, scans, NOW + 1000)] == [0]


def test_after_the_grace_a_batch_whose_transaction_never_ended_fails():
    scans = open_scan()
    add(scans, data(1, range(0, 2)))
    [verdict] = judge_round([pending(0, 1, range(0, 2))], scans, NOW + 31_000)
    assert verdict.outcome == FAILED and "still open" in verdict.problems[0]


def test_another_writers_record_before_the_first_batch_followed_is_reported_outside_not_failed():
    scans = open_scan()
    add(scans, data(99, [0]), marker(99, 1), data(1, range(2, 4)), marker(1, 4))
    outside: list[str] = []
    [verdict] = judge_round([pending(0, 1, range(2, 4))], scans, NOW + 1000, outside=outside)
    assert verdict.outcome == PASSED and outside == [
        "out[0] offset 0: 1 record(s) of another writer (producer 99) that read_committed readers see "
        "(before the first batch followed in the partition, or after batches that aged out: not attributed)"]


def test_another_writers_committed_record_fails_the_batch_whose_records_follow_it():
    scans = open_scan()
    add(scans, data(1, range(0, 2)), marker(1, 2))
    add(scans, data(99, [3]), marker(99, 4))      # another writer's transaction, committed
    add(scans, data(2, range(5, 7)), marker(2, 7))
    [first] = judge_round([pending(0, 1, range(0, 2))], scans, NOW + 1000)
    assert first.outcome == PASSED, "the foreign part lies after batch 0's records"
    [second] = judge_round([pending(1, 2, range(5, 7))], scans, NOW + 1000)
    assert second.outcome == FAILED and second.first_problem == {"topic": "out", "partition": 0, "offset": 3}
    assert "another writer (producer 99)" in second.problems[0]


def test_a_non_transactional_record_before_a_batch_fails_it_once():
    scans = open_scan()
    add(scans, data(1, range(0, 2)), marker(1, 2), data(7, [3], transactional=False), data(2, range(4, 6)),
        marker(2, 6))
    [first, verdict] = judge_round([pending(0, 1, range(0, 2)), pending(1, 2, range(4, 6))], scans, NOW + 1000)
    assert first.outcome == PASSED and verdict.outcome == FAILED and verdict.first_problem["offset"] == 3
    assert scans[("out", 0)].foreign == [], "placed once: the next batch does not fail for it again"


def test_a_committed_transaction_of_a_later_batch_is_not_foreign():
    scans = open_scan()
    add(scans, data(1, range(0, 2)), marker(1, 2), data(2, range(3, 5)), marker(2, 5))
    verdicts = judge_round([pending(0, 1, range(0, 2)), pending(1, 2, range(3, 5))], scans, NOW + 1000)
    assert [v.outcome for v in verdicts] == [PASSED, PASSED]


def test_after_batches_aged_out_their_records_are_not_taken_for_another_writers():
    """Batches 1-2 left the sink log unjudged: their committed transactions stay in the scan, unclaimed.
    Before ``unanchor`` they failed batch 3 as another writer's records (seen on a real run)."""
    scans = open_scan()
    add(scans, data(1, range(0, 2)), marker(1, 2))
    judge_round([pending(0, 1, range(0, 2))], scans, NOW + 1000)
    add(scans, data(2, range(3, 5)), marker(2, 5), data(3, range(6, 8)), marker(3, 8))  # batch 1 (aged out)
    add(scans, data(4, range(9, 11)), marker(4, 11))
    unanchor(scans)
    outside: list[str] = []
    [verdict] = judge_round([pending(3, 4, range(9, 11))], scans, NOW + 1000, outside=outside)
    assert verdict.outcome == PASSED and len(outside) == 2 and "aged out" in outside[0]
