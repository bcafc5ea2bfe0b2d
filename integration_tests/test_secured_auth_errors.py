"""A refused login on the SASL_SSL cluster (wrong password, unknown user) reads as an authentication
failure naming the user and the mechanism, never the password, in ``validate``, ``status`` and at
the start of ``run``; not as "cannot reach Kafka ... Broker transport failure"."""
from __future__ import annotations

import pytest

from integration_tests.pipeline_cli import kafka_eos
from integration_tests.secured import secured_broker, secured_pipeline

__all__ = ["secured_broker"]
WRONG = "Wrong-Pw-9f2e"


@pytest.mark.parametrize("user", ["etl", "nobody"])
def test_a_refused_login_is_named_in_validate_status_and_run(secured_broker, tmp_path, user):
    path, _ = secured_pipeline(secured_broker, tmp_path)
    env = {"KAFKA_USERNAME": user, "KAFKA_PASSWORD": WRONG}
    said = f"authentication failed for user '{user}' with SASL mechanism SCRAM-SHA-512"
    runs = {command: kafka_eos([command, str(path), *args], secured_broker.bootstrap, tmp_path / "checkpoints",
                               env=env)
            for command, args in (("validate", ("--timeout", "5")), ("status", ("--timeout", "5")),
                                  ("run", ("--once", "--timeout", "5")))}
    for command, run in runs.items():
        output = run.stdout + run.stderr
        assert said in output, f"{command}:\n{run.log()}"
        assert "cannot reach Kafka" not in output and WRONG not in output, f"{command}:\n{run.log()}"
    assert runs["validate"].code == 1 and f"--entity-name {user}" in runs["validate"].stderr
    assert runs["run"].code == 1 and "nothing was started" in runs["run"].stderr
    assert runs["status"].code != 0
