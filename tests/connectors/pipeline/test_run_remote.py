"""`kafka-eos run --remote sc://host:port`: the CLI hands the run to the Spark Connect runner."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.pipeline import runner
from tests.factories import load, valid, write


@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    from kafka_eos.connectors.pipeline import validation
    path = write(tmp_path, "p.yaml", valid(tmp_path))
    cfg, _ = load(tmp_path, valid(tmp_path))
    monkeypatch.setattr(validation, "load_valid", lambda *a, **k: cfg)
    return path, cfg


def test_run_remote_hands_the_url_once_conf_and_metrics_port_to_the_connect_runner(pipeline, monkeypatch):
    from kafka_eos.connectors import cli
    path, cfg = pipeline
    calls = []
    monkeypatch.setattr(runner, "run_remote", lambda *a, **k: calls.append((a, k)) or runner.RunResult("p"))
    monkeypatch.setattr(runner, "run_local", lambda *a, **k: pytest.fail("ran in this process"))
    assert cli.main(["run", str(path), "--remote", "sc://spark:15002", "--once", "--conf",
                     "spark.sql.shuffle.partitions=4", "--metrics-port", "9502"]) == 0
    (args, kwargs), = calls
    assert args == (cfg, "sc://spark:15002", True)
    assert kwargs["conf"] == {"spark.sql.shuffle.partitions": "4"} and kwargs["metrics_port"] == 9502


def test_run_refuses_master_with_remote_before_starting_anything(pipeline, monkeypatch, capsys):
    from kafka_eos.connectors import cli
    from kafka_eos.connectors.pipeline import submit
    path, _ = pipeline
    for name, module in (("run_remote", runner), ("run_local", runner), ("submit", submit)):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("started"))
    assert cli.main(["run", str(path), "--remote", "sc://spark:15002", "--master", "local[2]"]) == 1  # invalid
    assert "--master and --remote exclude each other" in capsys.readouterr().err


def test_a_connect_client_sets_only_sql_settings_and_keeps_the_option_redaction():
    assert runner.REMOTE_CONF and all(key.startswith("spark.sql.") for key in runner.REMOTE_CONF)
    assert runner.REMOTE_CONF["spark.sql.redaction.options.regex"] == runner.RUN_CONF["spark.sql.redaction.options.regex"]


def test_local_and_submitted_runs_give_python_workers_freed_memory_back():
    """Every Python worker gets glibc settings that return freed memory (in-process runs and the
    spark-submit entry both start from RUN_CONF); a Connect client cannot set them."""
    env = {key: value for key, value in runner.RUN_CONF.items() if key.startswith("spark.executorEnv.")}
    assert env == runner.WORKER_MEMORY_CONF == {"spark.executorEnv.MALLOC_TRIM_THRESHOLD_": "1048576",
                                                "spark.executorEnv.MALLOC_MMAP_THRESHOLD_": "1048576"}
    assert not set(env) & set(runner.REMOTE_CONF)


class ConnectSession:  # what SparkSession.builder.remote(...) returns: no SparkContext
    __module__ = "pyspark.sql.connect.session"

    @property
    def sparkContext(self):
        raise AssertionError("a Spark Connect session has no SparkContext")


def test_skipped_records_are_not_counted_over_spark_connect(tmp_path):
    from dataclasses import replace
    from kafka_eos.config.model import OnDecodeError
    cfg, _ = load(tmp_path, valid(tmp_path))
    cfg = replace(cfg, errors=replace(cfg.errors, on_decode_error=OnDecodeError.SKIP))
    assert runner.is_connect(ConnectSession())
    assert runner._skipped_counter(ConnectSession(), cfg) == (None, None)
