"""Crash matrix over SASL_SSL: the driver is SIGKILLed after the commit decision, then restarted
from its checkpoint; the recovery (EndTxn through the control plane, as ``etl`` over SCRAM and
TLS) brings every input id exactly once into the read_committed output. Real spark-submit."""
from __future__ import annotations


import pytest

from integration_tests.kafka_tools import assert_exactly_once
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from integration_tests.secured_cluster import (check_exactly_once_as_admin, secured_broker, seeded_topics, start_secured_job)

__all__ = ["secured_broker"]
IDS = 3000


@pytest.fixture
def names(secured_broker):
    return seeded_topics(secured_broker, "crash", IDS)


def run(cluster, args, log, timeout: float = 400) -> None:
    proc = start_secured_job(cluster, args, log)
    try:
        rc = proc.wait(timeout)
    except Exception:
        kill_group(proc)
        raise
    assert rc == 0, f"job failed ({rc}):\n{tail(log)}"


@pytest.mark.parametrize("point", [pytest.param("after_decision", marks=pytest.mark.chaos)])  # `make chaos`: make
# test keeps the crash matrix (test_sink_crash_matrix) and secured runs (test_secured_secrets, test_secured_oauth)
def test_driver_killed_after_the_decision_recovers_exactly_once_over_sasl_ssl(point, secured_broker, names, tmp_path):
    args = ["--input", names["input"], "--output", names["output"], "--checkpoint", str(tmp_path / "checkpoint"),
            "--prefix", names["prefix"], "--max-offsets", "1000"]
    log = tmp_path / "job.log"
    (tmp_path / "faults").mkdir()
    proc = start_secured_job(secured_broker, args + ["--fault", f"{point}@1", "--fault-dir", str(tmp_path / "faults")],
                             log)
    wait_for((tmp_path / "faults", f"{point}.*"), proc, 300, log)
    kill_group(proc)
    run(secured_broker, args, log)
    assert_exactly_once(check_exactly_once_as_admin(secured_broker, names["output"], ids=IDS))
    assert "batch 1 was decided but not fully committed" in log.read_text(), "the restart finished the decided batch"
