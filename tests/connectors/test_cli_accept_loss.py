"""`kafka-eos accept-loss`: by pipeline file or --sink-log, once, saying what it dropped."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.cli import main
from kafka_eos.txn.protocol.kafka_committer import LOST
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_log import SinkLog, SinkLogReader
from tests.factories import valid, write
from tests.txn.fakes import FakeCommitter, NoAborter, handle


def _lost_batch(location: str, prefix: str) -> None:
    protocol = TwoPhaseCommitProtocol(SinkLog(location, prefix), FakeCommitter({1: LOST}), NoAborter())
    with pytest.raises(Exception):
        protocol.commit_batch(4, [handle(0), handle(1, records=7)])


def test_accept_loss_by_pipeline_file_once(tmp_path, capsys):
    data = valid(tmp_path)
    location = str(tmp_path / "ckpt" / "kafka-eos-sink")
    _lost_batch(location, data["sink"]["transactional_id_prefix"])
    path = str(write(tmp_path, "p.yaml", data))
    assert main(["accept-loss", path, "--batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "batch 4 accepted without 7 records of 1 lost sink partition(s)" in out
    assert f"{tmp_path / 'ckpt'}/offsets/4" in out
    assert SinkLogReader(location).get(4).state == "committed"
    assert main(["accept-loss", path, "--batch", "4"]) == 1
    assert "already accepted" in capsys.readouterr().err


def test_accept_loss_by_sink_log_and_its_refusals(tmp_path, capsys):
    assert main(["accept-loss", "--sink-log", str(tmp_path / "none"), "--batch", "4"]) == 1
    assert "no sink log here" in capsys.readouterr().err
    _lost_batch(str(tmp_path / "log"), "code-prefix")
    assert main(["accept-loss", "--sink-log", str(tmp_path / "log"), "--batch", "3"]) == 1
    assert "not the sink log's last batch (4)" in capsys.readouterr().err
    assert main(["accept-loss", "--sink-log", str(tmp_path / "log"), "--batch", "4"]) == 0
    assert main(["accept-loss", "--batch", "4"]) == 1  # an invalid command line
