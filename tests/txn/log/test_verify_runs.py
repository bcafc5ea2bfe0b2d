"""Verify runs recorded beside the sink log: create-only, versioned, the newest kept, read in order."""
from __future__ import annotations

import json

import pytest

from kafka_eos.txn.log import verify_runs
from kafka_eos.txn.protocol.errors import SinkLogError
from kafka_eos.txn.log.verify_runs import latest_run, record_run, runs_since


def test_runs_read_back_in_order_and_since_a_time(tmp_path):
    log = str(tmp_path / "log")
    assert latest_run(log) is None
    record_run(log, {"verified": [1, 2]}, 2, None, at_ms=1_000)
    name = record_run(log, {"verified": [3], "failed": [4]}, 3, {"batch": 4, "topic": "o", "partition": 1,
                                                                 "offset": 9}, at_ms=2_000)
    assert name.startswith("_verify-runs/000000000002000-")
    assert [r.at_ms for r in runs_since(log)] == [1_000, 2_000] and [r.at_ms for r in runs_since(log, 1_000)] == [2_000]
    latest = latest_run(log)
    assert latest is not None and latest.count("failed") == 1 and latest.first_problem["offset"] == 9


def test_the_newest_are_kept_and_an_unknown_format_is_refused(tmp_path, monkeypatch):
    log = str(tmp_path / "log")
    monkeypatch.setattr(verify_runs, "KEEP", 3)
    for at in range(5):
        record_run(log, {"verified": [at]}, at, None, at_ms=at + 1)
    assert [r.newest_verified for r in runs_since(log)] == [2, 3, 4]
    (tmp_path / "log" / "_verify-runs" / "000000000000099-abcdef01.json").write_text(json.dumps({"v": 9}))
    with pytest.raises(SinkLogError, match="verify run record format 9 is not 1"):
        runs_since(log)
