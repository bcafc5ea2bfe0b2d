"""A local master listens on loopback only; describe reports which of Spark's security settings are on."""
from __future__ import annotations

import os

import pytest

from kafka_eos.connectors.pipeline.spark_security import bind_local, local_binding, security_facts


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[2,3]"])
def test_a_local_master_binds_the_driver_to_loopback_with_the_ui_off(master):
    assert local_binding(master) == {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
                                     "spark.ui.enabled": "false"}
    assert local_binding(master, ui=True)["spark.ui.enabled"] == "true"


@pytest.mark.parametrize("master", ["spark://h:7077", "yarn", "k8s://https://api:6443"])
def test_a_cluster_master_gets_no_binding(master):
    assert local_binding(master) == {}


def test_bind_local_sets_spark_local_ip_unless_the_user_did(monkeypatch):
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    bind_local("spark://h:7077")
    assert "SPARK_LOCAL_IP" not in os.environ
    bind_local("local[2]")
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.5")
    bind_local("local[2]")
    assert os.environ["SPARK_LOCAL_IP"] == "10.0.0.5"


def test_describe_reads_spark_defaults_and_the_given_conf(tmp_path):
    (tmp_path / "spark-defaults.conf").write_text("# cluster settings\nspark.authenticate   true\n"
                                                  "spark.network.crypto.enabled=true\nspark.ssl.enabled false\n")
    facts = security_facts("spark://h:7077", {"spark.ssl.enabled": "true"}, env={"SPARK_CONF_DIR": str(tmp_path)})
    assert facts["spark_defaults"] == str(tmp_path / "spark-defaults.conf") and "listens_on" not in facts
    assert facts["settings"]["spark.authenticate"] == "true"
    assert facts["settings"]["spark.network.crypto.enabled"] == "true"
    assert facts["settings"]["spark.ssl.enabled"] == "true", "--conf wins over spark-defaults.conf"
    assert facts["settings"]["spark.acls.enable"] == "unset"


def test_describe_of_the_in_process_run_says_loopback_only():
    facts = security_facts(None, env={})
    assert facts["master"] == "local[*]" and facts["listens_on"].startswith("127.0.0.1 only")
    assert facts["settings"]["spark.ui.enabled"] == "false"


@pytest.mark.parametrize("args, expected", [
    (["--master", "local[2]"], {"spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false"}),
    (["--master", "local[2]", "--spark-ui"], {"spark.ui.enabled": "true"}),
    (["--master", "local[2]", "--conf", "spark.driver.bindAddress=0.0.0.0"], {"spark.driver.bindAddress": "0.0.0.0"}),
    (["--master", "spark://h:7077"], {"spark.driver.bindAddress": None, "spark.ui.enabled": None}),
    ([], {"spark.driver.host": "127.0.0.1", "spark.ui.enabled": "false"}),
])
def test_run_gives_both_paths_the_binding_and_the_users_conf_wins(monkeypatch, tmp_path, args, expected):
    from kafka_eos.connectors import cli
    from kafka_eos.config import records
    from kafka_eos.connectors.pipeline import held_states, runner, submit, validation
    given: dict[str, str] = {}
    monkeypatch.setattr(held_states, "check_held", lambda cfg: None)
    monkeypatch.setattr(records, "records_home", lambda cfg: cfg.checkpoint.location)
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)  # bind_local sets it; restored after the test
    checkpoint = type("Checkpoint", (), {"location": str(tmp_path / "ck")})()
    monkeypatch.setattr(validation, "load_valid", lambda *a, **k: type("Cfg", (), {"secrets": lambda s: [],
                                                                                   "name": "t", "checkpoint": checkpoint})())
    monkeypatch.setattr(submit, "submit", lambda *a, **k: given.update(a[4]) or 0)
    monkeypatch.setattr(runner, "run_local", lambda cfg, once, conf, **k: given.update(conf) or runner.RunResult("t"))
    assert cli.main(["run", str(tmp_path / "p.yaml"), *args]) == 0
    assert {key: given.get(key) for key in expected} == expected
