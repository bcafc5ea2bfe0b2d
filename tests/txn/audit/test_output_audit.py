"""OutputAudit over record batches as the log holds them (pure logic: batches built here)."""
from __future__ import annotations

from dataclasses import dataclass

from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.audit.output_audit import FAILED, PASSED, UNVERIFIABLE, PartitionScan, judge, place_foreign
from kafka_eos.txn.writer.record_digest import DIGEST_FORMAT, TIMESTAMP_FORMAT, PartitionDigest, TimestampDigest


@dataclass
class Rec:
    offset: int
    key: bytes | None = None
    value: bytes | None = b"v"
    headers: tuple = ()
    commit: bool = True
    timestamp: int = 1_700_000_000_000


@dataclass
class Batch:
    producer_id: int
    producer_epoch: int
    records: list
    is_transactional: bool = True
    is_control_batch: bool = False
    timestamp_type: int = 0

    def __iter__(self):
        return iter(self.records)


def data(pid: int, offsets, epoch: int = 0, transactional: bool = True) -> Batch:
    return Batch(pid, epoch, [Rec(o, value=b"v%d" % o) for o in offsets], is_transactional=transactional)


def marker(pid: int, offset: int, commit: bool = True, epoch: int = 0) -> Batch:
    return Batch(pid, epoch, [Rec(offset, commit=commit)], is_control_batch=True)


def digest_of(offsets) -> str:
    d = PartitionDigest()
    for o in offsets:
        d.add_record(None, b"v%d" % o, ())
    return d.hexdigest()


def handle(pid: int, offsets, sink_partition: int = 0, digest: str | None = None, count: int | None = None) -> TxnHandle:
    n = len(list(offsets)) if count is None else count
    return TxnHandle(sink_partition=sink_partition, transactional_id=f"t-{pid}", producer_id=pid, producer_epoch=0,
                     records=n, partitions={"out": {"0": n}},
                     digests={"out": {"0": digest or digest_of(offsets)}}, digest_format=DIGEST_FORMAT)


def scan_of(batches, expected, start: int = 0, log_start: int = 0) -> dict:
    scan = PartitionScan("out", 0, start, log_start)
    for b in batches:
        scan.add(b, expected)
    return {("out", 0): scan}


def test_interleaved_transactions_are_attributed_by_producer_and_verified():
    log = [data(1, [0, 1]), data(2, [2]), data(1, [3]), marker(1, 4), data(2, [5]), marker(2, 6)]
    scans = scan_of(log, {(1, 0), (2, 0)})
    first, second = judge(0, [handle(1, [0, 1, 3])], scans), judge(1, [handle(2, [2, 5])], scans)
    assert first.outcome == second.outcome == PASSED
    assert (first.ranges, second.ranges) == ({"out": {"0": [[0, 3]]}}, {"out": {"0": [[2, 5]]}}), \
        "each transaction's first and last offset, as found in the log"


def test_a_count_or_content_that_differs_fails_at_the_transactions_first_offset():
    scans = scan_of([data(1, [0, 1, 2]), marker(1, 3)], {(1, 0)})
    short = judge(0, [handle(1, [0, 1, 2], count=4)], scans)
    assert short.outcome == FAILED and short.first_problem == {"topic": "out", "partition": 0, "offset": 0}
    changed = judge(0, [handle(1, [0, 1, 2], digest=digest_of([0, 1]))], scans)
    assert changed.outcome == FAILED and "digest" in changed.problems[0]


def test_an_aborted_an_open_or_a_missing_transaction_fails():
    scans = scan_of([data(1, [0]), marker(1, 1, commit=False), data(2, [2])], {(1, 0), (2, 0), (3, 0)})
    assert "aborted" in judge(0, [handle(1, [0])], scans).problems[0]
    assert "still open" in judge(0, [handle(2, [2])], scans).problems[0]
    missing = judge(0, [handle(3, [9])], scans)
    assert missing.outcome == FAILED and "not in the log" in missing.problems[0]


def test_deleted_records_make_a_batch_unverifiable_never_passed():
    gone = judge(0, [handle(3, [0, 1])], scan_of([data(4, [5]), marker(4, 6)], {(3, 0), (4, 0)}, log_start=5))
    assert gone.outcome == UNVERIFIABLE and gone.first_problem["offset"] == 5
    cut = judge(0, [handle(1, [3, 4, 5])], scan_of([data(1, [4, 5]), marker(1, 6)], {(1, 0)}, start=4, log_start=4))
    assert cut.outcome == UNVERIFIABLE and "deleted" in cut.problems[0]


def test_a_handle_without_evidence_cannot_be_verified():
    old = TxnHandle(sink_partition=0, transactional_id="t-1", producer_id=1, producer_epoch=0, records=1,
                    partitions={"out": {"0": 1}})
    verdict = judge(0, [old], scan_of([data(1, [0]), marker(1, 1)], {(1, 0)}))
    assert verdict.outcome == UNVERIFIABLE and "no write evidence" in verdict.problems[-1]


def test_foreign_records_inside_the_batches_fail_the_next_batch_and_outside_are_reported():
    log = [data(9, [0], transactional=False),                  # before every batch: outside
           data(1, [1]), marker(1, 2),                          # batch 0
           data(7, [3]), marker(7, 4),                          # another writer's commit
           data(8, [5]), marker(8, 6, commit=False),            # another writer's abort: invisible, fine
           data(2, [7]), marker(2, 8),                          # batch 1
           data(9, [9], transactional=False)]                  # after every batch: outside
    handles = {0: [handle(1, [1])], 1: [handle(2, [7])]}
    scans = scan_of(log, {(1, 0), (2, 0)})
    verdicts = {b: judge(b, hs, scans) for b, hs in handles.items()}
    outside = place_foreign(verdicts, handles, scans)
    assert verdicts[0].outcome == PASSED
    assert verdicts[1].outcome == FAILED and verdicts[1].first_problem == {"topic": "out", "partition": 0, "offset": 3}
    assert [line.split(":")[0] for line in outside] == ["out[0] offset 0", "out[0] offset 9"]


def test_on_a_compacted_topic_a_part_that_no_longer_matches_cannot_be_verified():
    scan = PartitionScan("out", 0, 0, 0, compacted=True)
    for b in (data(1, [0, 2]), marker(1, 3)):  # offset 1 compacted away
        scan.add(b, {(1, 0)})
    verdict = judge(0, [handle(1, [0, 1, 2])], {("out", 0): scan})
    assert verdict.outcome == UNVERIFIABLE and "compacted" in verdict.problems[0]
    intact = PartitionScan("out", 0, 0, 0, compacted=True)
    for b in (data(1, [0, 1, 2]), marker(1, 3)):
        intact.add(b, {(1, 0)})
    assert judge(0, [handle(1, [0, 1, 2])], {("out", 0): intact}).outcome == PASSED


def _timed(offsets, times) -> list:
    return [Rec(o, value=b"v%d" % o, timestamp=t) for o, t in zip(offsets, times, strict=True)]


def _times_digest(times) -> str:
    d = TimestampDigest()
    for t in times:
        d.add_record(t)
    return d.hexdigest()


def test_a_record_whose_timestamp_differs_from_what_the_task_wrote_fails_the_batch():
    written = [1_000, 2_000, 3_000]
    timed = TxnHandle(**{**handle(1, [0, 1, 2]).__dict__, "timestamp_digests": {"out": {"0": _times_digest(written)}},
                         "timestamp_format": TIMESTAMP_FORMAT})
    same = scan_of([Batch(1, 0, _timed([0, 1, 2], written)), marker(1, 3)], {(1, 0)})
    assert judge(0, [timed], same).outcome == PASSED
    moved = scan_of([Batch(1, 0, _timed([0, 1, 2], [1_000, 2_001, 3_000])), marker(1, 3)], {(1, 0)})
    verdict = judge(0, [timed], moved)
    assert verdict.outcome == FAILED and "timestamps of the records at 0-2" in verdict.problems[0]
    assert judge(0, [handle(1, [0, 1, 2])], moved).outcome == PASSED, "a handle without timestamp digests: not checked"
    stamped_by_broker = scan_of([Batch(1, 0, _timed([0, 1, 2], [9, 9, 9]), timestamp_type=1), marker(1, 3)], {(1, 0)})
    assert judge(0, [timed], stamped_by_broker).outcome == PASSED, "LogAppendTime: the broker's clock, not checked"
    other = TxnHandle(**{**timed.__dict__, "timestamp_format": "xxh3_64/kafka-eos-timestamps-9"})
    assert judge(0, [other], same).outcome == UNVERIFIABLE


def test_the_timestamp_digest_is_the_same_by_column_and_by_record():
    import pyarrow as pa
    column = TimestampDigest()
    column.add_column(pa.array([5, 6], pa.int64()))
    column.add_column(pa.array([7], pa.int64()))
    assert column.hexdigest() == _times_digest([5, 6, 7]) != _times_digest([5, 7, 6]) != _times_digest([5, 6])


def test_the_scan_begins_before_records_whose_timestamps_the_task_chose_however_old():
    from kafka_eos.txn.audit.output_scan import scan_start_ms
    plain = handle(1, [0])
    old = TxnHandle(**{**plain.__dict__, "earliest_timestamp_ms": 1_000})
    assert scan_start_ms([500_000, 400_000], [plain], 60_000, 10_000) == 330_000, "the commit less timeout and margin"
    assert scan_start_ms([500_000], [plain, old], 60_000, 10_000) == 1_000, "a copy of old records: their earliest"
    assert scan_start_ms([500_000, None], [old], 60_000, 10_000) is None, "a commit time unknown: the log start"
