"""``kafka-eos verify``'s arguments and report (the reading itself: integration_tests/pipeline/test_verify.py)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from kafka_eos.connectors.operate.verify import VerifyReport, parse_batches, render, since_ms_of
from kafka_eos.txn.audit.output_audit import FAILED, PASSED, UNVERIFIABLE, BatchVerdict


def test_batch_ranges_and_times():
    assert parse_batches("3..7") == (3, 7) and parse_batches("3..")[0] == 3 and parse_batches("..7") == (0, 7)
    assert parse_batches(None) is None
    with pytest.raises(ValueError, match="write A..B"):
        parse_batches("7")
    assert since_ms_of("2026-11-28T12:00:00") == since_ms_of("2026-11-28T12:00:00+00:00") == 1795867200000
    assert since_ms_of("1795867200000") == 1795867200000 and since_ms_of(None) is None


def test_exit_0_only_when_every_batch_verified_and_the_first_problem_is_named():
    assert VerifyReport().exit_code == 8, "nothing in range proves nothing: a code of its own"
    assert VerifyReport([BatchVerdict(1, PASSED, 10)]).exit_code == 0
    bad = BatchVerdict(2, PASSED, 5)
    bad.fail(UNVERIFIABLE, "out", 0, 4, "deleted")
    bad.fail(FAILED, "out", 1, 9, "another writer")
    report = VerifyReport([BatchVerdict(1, PASSED, 10), bad])
    doc = report.document()
    assert report.exit_code == 6 and doc["exit_code"] == 6 and doc["batches"] == {"verified": 1, "failed": 1}
    assert doc["first_problem"] == {"batch": 2, "topic": "out", "partition": 1, "offset": 9}
    cfg = SimpleNamespace(name="orders")
    assert json.loads(render(cfg, report, as_json=True))["pipeline"] == "orders"
    text = render(cfg, report)
    assert "batch 2: failed (5 records)" in text and "first problem: batch 2 at out[1] offset 9" in text


def test_failed_cannot_be_verified_and_nothing_in_range_have_codes_of_their_own():
    """Issue 58: a scheduled verify pages on corruption alone (6), not on "cannot be verified" (7)
    or "no batch in range" (8); before, all three exited 1."""
    gone = BatchVerdict(3, PASSED, 5)
    gone.fail(UNVERIFIABLE, "out", 0, 4, "deleted by retention")
    assert VerifyReport([BatchVerdict(1, PASSED, 10), gone]).exit_code == 7
    wrong = BatchVerdict(4, PASSED, 5)
    wrong.fail(FAILED, "out", 1, 9, "records missing")
    assert VerifyReport([gone, wrong]).exit_code == 6, "a failure wins over a batch that cannot be verified"
    assert len({VerifyReport().exit_code, VerifyReport([gone]).exit_code, VerifyReport([wrong]).exit_code, 0}) == 4
