"""validate's word on the store of kafka-eos's records (config/validate._store): a store that does
not exclude a second writer by itself is a warning (one driver per checkpoint), an exclusive one is not."""
from __future__ import annotations

import errno

from kafka_eos.config import validate
from kafka_eos.config.validate import Report
from kafka_eos.txn.log import file_create
from tests.factories import load, valid


def _warnings(tmp_path, where: str) -> list[str]:
    data = valid(tmp_path)
    data["checkpoint"]["location"] = str(tmp_path / where)
    cfg, found = load(tmp_path, data)
    assert found == [] and cfg is not None
    report = Report(files=["p.yaml"])
    assert validate._store(cfg, report) == []
    return report.warnings


def test_hard_links_warn_of_nothing(tmp_path):
    assert _warnings(tmp_path, "linked") == []


def test_a_mount_without_hard_links_warns_to_run_one_driver_per_checkpoint(tmp_path, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")
    monkeypatch.setattr(file_create.os, "link", refuse)
    monkeypatch.setattr(file_create, "_MODES", {})  # the mode found per device, as on a fresh mount
    [warning] = _warnings(tmp_path, "mounted")
    assert "records are create-only by checked" in warning and "one driver per checkpoint" in warning, warning
