"""The query start's sweep count, recorded beside the sink log for the driver's metrics."""
from __future__ import annotations

import json

import pytest

from kafka_eos.txn.log import start_sweeps
from kafka_eos.txn.protocol.errors import SinkLogError
from kafka_eos.txn.log.start_sweeps import FOLDER, aborted_since, record_sweep


def test_sweeps_are_summed_from_a_time_on_and_a_sweep_of_nothing_writes_nothing(tmp_path):
    log = str(tmp_path / "kafka-eos-sink")
    record_sweep(log, 0, at_ms=1_000)
    assert not (tmp_path / "kafka-eos-sink" / FOLDER).exists()
    record_sweep(log, 3, at_ms=1_000)
    record_sweep(log, 2, at_ms=2_000)
    record_sweep(log, 4, at_ms=2_000)  # two starts in one millisecond: both kept
    assert (aborted_since(log, 0), aborted_since(log, 1_001), aborted_since(log, 2_001)) == (9, 6, 0)
    assert aborted_since(str(tmp_path / "none"), 0) == 0


def test_only_the_newest_are_kept_and_an_unknown_format_is_refused(tmp_path, monkeypatch):
    log = str(tmp_path / "kafka-eos-sink")
    monkeypatch.setattr(start_sweeps, "KEEP", 3)
    for at in range(1, 6):
        record_sweep(log, 1, at_ms=at)
    assert len(list((tmp_path / "kafka-eos-sink" / FOLDER).iterdir())) == 3 and aborted_since(log, 0) == 3
    (tmp_path / "kafka-eos-sink" / FOLDER / "000000000000009-abc.json").write_text(json.dumps({"v": 9, "aborted": 1}))
    with pytest.raises(SinkLogError, match="start sweep record format 9 is not 1"):
        aborted_since(log, 0)


def test_a_store_that_fails_loses_the_count_not_the_start(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("")
    record_sweep(str(blocked), 2, at_ms=1)  # the folder cannot be made under a file
    assert "was not recorded" in caplog.text
