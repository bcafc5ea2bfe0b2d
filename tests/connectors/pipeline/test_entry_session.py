"""entry: a driver whose SparkSession cannot be built (its master does not answer) exits with the
failure's code and a redacted line, for one pipeline and for a group alike: Python's own 1 for an
uncaught exception would read "invalid" to a supervisor of spark-submit."""
from __future__ import annotations

import pytest

from kafka_eos.connectors import cli_group
from kafka_eos.connectors.exit_codes import of_error
from kafka_eos.connectors.pipeline import entry, held_states, validation
from tests.factories import loaded

SECRET = "s3cr3t-password"
UNRESPONSIVE = RuntimeError(f"All masters are unresponsive! Giving up. (sasl.password={SECRET})")


def with_secret(data: dict) -> None:
    data["sink"]["kafka"]["properties"] = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                           "sasl.username": "u", "sasl.password": SECRET}


@pytest.fixture
def master_down(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise UNRESPONSIVE
    monkeypatch.setattr(entry, "_session", refuse)


def test_one_pipeline_whose_master_does_not_answer_exits_with_the_failures_code(tmp_path, monkeypatch, master_down,
                                                                                capsys):
    cfg = loaded(tmp_path, with_secret)
    monkeypatch.setattr(validation, "load_valid", lambda path, timeout_s: cfg)
    monkeypatch.setattr(held_states, "check_held", lambda cfg: None)
    code = entry.main(["--config", "p.yaml"])
    err = capsys.readouterr().err
    assert code == of_error(UNRESPONSIVE) and code != 1
    assert "All masters are unresponsive" in err and SECRET not in err


def test_a_group_whose_master_does_not_answer_exits_with_the_failures_code(tmp_path, monkeypatch, master_down, capsys):
    cfgs = [loaded(tmp_path / name, with_secret) for name in ("a", "b")]
    monkeypatch.setattr(cli_group, "valid_group", lambda files, timeout_s: (cfgs, []))
    code = entry.main(["--config", "a.yaml", "--config", "b.yaml"])
    err = capsys.readouterr().err
    assert code == of_error(UNRESPONSIVE) and code != 1
    assert "All masters are unresponsive" in err and SECRET not in err
