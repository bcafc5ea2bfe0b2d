"""A refused login on the SASL_SSL cluster (wrong password, unknown user) reads as an authentication
failure naming the user and the mechanism, never the password, in ``validate``, ``status`` and at
the start of ``run``, and through the Spark source used directly (``spark.read.format("kafka-eos")``);
not as "cannot reach Kafka ... Broker transport failure"."""
from __future__ import annotations

import pytest

from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.secured_cluster import secured_broker, secured_pipeline
from kafka_eos.connectors import register

__all__ = ["secured_broker"]
WRONG = "Wrong-Pw-9f2e"


@pytest.mark.parametrize("user", ["etl", pytest.param("nobody", marks=pytest.mark.chaos)])  # `make chaos`: the unknown user
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
    assert runs["validate"].code == 3 and f"--entity-name {user}" in runs["validate"].stderr  # not authorized
    assert runs["run"].code == 3 and "nothing was started" in runs["run"].stderr
    assert runs["status"].code != 0


def test_a_refused_login_on_the_spark_source_is_named(spark, secured_broker):
    """The source's first lookup (its topics' partitions) reports the refused login, not a transport
    failure; the deadline is short so a lookup that retried until it would still end the test."""
    register(spark)
    reader = (spark.read.format("kafka-eos").option("subscribe", unique("orders"))
              .option("lookupTimeoutMs", "20000"))
    for key, value in {**secured_broker.client_conf("etl"), "sasl.password": WRONG}.items():
        reader = reader.option(f"kafka.{key}", value)
    with pytest.raises(Exception) as failed:
        reader.load().collect()
    text = str(failed.value)
    assert "authentication failed for user 'etl' with SASL mechanism SCRAM-SHA-512" in text, text
    assert "brokers are reachable" not in text and "Broker transport failure" not in text, text
    assert WRONG not in text, text
