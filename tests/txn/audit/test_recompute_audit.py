"""RecomputeAudit: a verified batch's committed records against its re-run (pure logic)."""
from __future__ import annotations

from kafka_eos.txn.audit.output_audit import FAILED, PASSED, UNVERIFIABLE, PartitionScan, judge
from kafka_eos.txn.audit.recompute_audit import committed_sets, judge_recomputed
from kafka_eos.txn.writer.record_digest import DIGEST_FORMAT, PartitionDigest
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.audit.record_set import RecordSet
from tests.txn.audit.test_output_audit import Batch, Rec, marker

ROWS = {0: [(b"a", b"1"), (None, b"2")], 1: [(b"b", b"3"), (b"c", b"4")]}  # partition -> records of one task


def _handle(pid: int, partitions: dict[int, list]) -> TxnHandle:
    digests = {}
    for p, rows in partitions.items():
        d = PartitionDigest()
        for key, value in rows:
            d.add_record(key, value, ())
        digests[str(p)] = d.hexdigest()
    return TxnHandle(sink_partition=pid, transactional_id=f"t-{pid}", producer_id=pid, producer_epoch=0,
                     records=sum(map(len, partitions.values())),
                     partitions={"out": {str(p): len(r) for p, r in partitions.items()}},
                     digests={"out": digests}, digest_format=DIGEST_FORMAT)


def _scans(handles: list[TxnHandle], rows: dict[int, dict[int, list]]) -> dict:
    """Each handle's rows committed in each partition, one transaction after the other."""
    scans = {}
    for p in (0, 1):
        scan, offset = PartitionScan("out", p, 0, 0, sets=True), 0
        for h in handles:
            records = rows[h.producer_id].get(p, [])
            if records:
                scan.add(Batch(h.producer_id, 0, [Rec(offset + i, k, v) for i, (k, v) in enumerate(records)]),
                         {(h.producer_id, 0) for h in handles})
                offset += len(records)
                scan.add(marker(h.producer_id, offset), set())
                offset += 1
        scans[("out", p)] = scan
    return scans


def _recomputed(rows: list[tuple[int, bytes | None, bytes]]) -> dict:
    out: dict = {}
    for p, key, value in rows:
        out.setdefault(("out", None if key is None else p), RecordSet()).add(key, value, None)
    return out


def test_the_same_records_from_other_tasks_in_another_order_pass():
    handles = [_handle(7, {0: ROWS[0]}), _handle(8, {1: ROWS[1]})]
    scans = _scans(handles, {7: {0: ROWS[0]}, 8: {1: ROWS[1]}})
    verdict = judge(3, handles, scans)
    again = _recomputed([(1, b"c", b"4"), (0, None, b"2"), (1, b"b", b"3"), (0, b"a", b"1")])
    judge_recomputed(verdict, handles, scans, again)
    assert verdict.outcome == PASSED and verdict.recomputed == 4
    assert committed_sets(handles, scans)[("out", None)] == again[("out", None)], "keyless records per topic"


def test_a_record_the_transform_would_not_give_fails_at_the_batchs_first_offset_there():
    handles = [_handle(7, {0: ROWS[0]}), _handle(8, {1: ROWS[1]})]
    scans = _scans(handles, {7: {0: ROWS[0]}, 8: {1: ROWS[1]}})
    verdict = judge(3, handles, scans)
    judge_recomputed(verdict, handles, scans, _recomputed([(0, b"a", b"1"), (0, None, b"2"), (1, b"b", b"3")]))
    assert verdict.outcome == FAILED and verdict.first_problem == {"topic": "out", "partition": 1, "offset": 0}
    assert "(2) are not what the transform gives when re-run over the batch's input (1)" in verdict.problems[0]


def test_a_record_only_the_transform_gives_fails_too():
    handles = [_handle(7, {0: ROWS[0]})]
    scans = _scans(handles, {7: {0: ROWS[0]}})
    verdict = judge(3, handles, scans)
    judge_recomputed(verdict, handles, scans, _recomputed([(0, b"a", b"1"), (0, None, b"2"), (1, b"z", b"9")]))
    assert verdict.outcome == FAILED and verdict.first_problem["partition"] == 1, verdict


def test_a_batch_not_recomputed_cannot_be_verified_and_a_failed_one_keeps_its_verdict():
    handles = [_handle(7, {0: ROWS[0]})]
    scans = _scans(handles, {7: {0: ROWS[0]}})
    verdict = judge(3, handles, scans)
    judge_recomputed(verdict, handles, scans, None, "Spark's offset log no longer holds batch 2")
    assert verdict.outcome == UNVERIFIABLE and "not recomputed: Spark's offset log" in verdict.problems[0]
    failed = judge(3, [_handle(7, {0: ROWS[1]})], scans)
    assert failed.outcome == FAILED
    judge_recomputed(failed, handles, scans, {})
    assert failed.outcome == FAILED and failed.recomputed is None and len(failed.problems) == 1


def test_a_difference_over_a_compacted_input_cannot_be_verified_rather_than_failed():
    handles = [_handle(7, {0: ROWS[0]})]
    scans = _scans(handles, {7: {0: ROWS[0]}})
    verdict = judge(3, handles, scans)
    judge_recomputed(verdict, handles, scans, _recomputed([(0, None, b"2")]), compacted_inputs={"in"})
    assert verdict.outcome == UNVERIFIABLE and "input topic(s) in are compacted" in verdict.problems[0]
    same = judge(3, handles, scans)
    judge_recomputed(same, handles, scans, _recomputed([(0, b"a", b"1"), (0, None, b"2")]), compacted_inputs={"in"})
    assert same.outcome == PASSED, "a compacted input that still gives the same records passes"
