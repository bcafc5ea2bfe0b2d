"""A chaos run counts a query that stopped on its own as a failure, a driver it killed not."""
from __future__ import annotations

import subprocess

import pytest

from integration_tests.chaos import injector
from integration_tests.chaos.runner import ChaosRun, ChaosSettings
from integration_tests.kafka_tools import ExactlyOnceReport


def finished_run(planned: bool, tmp_path) -> ChaosRun:
    run = object.__new__(ChaosRun)  # no cluster: only the stop bookkeeping is under test
    run.s, run.log, run.unplanned_stops, run.planned_stop = ChaosSettings(), tmp_path / "job.log", 0, planned
    run.log.write_text("query failed\n")
    run.job = subprocess.Popen(["true"])
    run.job.wait()
    return run


def test_a_job_that_exits_without_a_planned_fault_is_counted(tmp_path):
    run = finished_run(planned=False, tmp_path=tmp_path)
    run.note_unplanned_stop()
    run.note_unplanned_stop()  # the same exit counts once
    assert run.unplanned_stops == 1


def test_a_driver_kill_is_not_an_unplanned_stop(tmp_path):
    run = finished_run(planned=True, tmp_path=tmp_path)
    run.note_unplanned_stop()
    assert run.unplanned_stops == 0


def test_an_unplanned_stop_fails_the_report():
    report = ExactlyOnceReport(records=10, expected=10, lost=0, duplicated=0, aborted_input=0, unplanned_stops=1)
    assert not report.ok and "1 unplanned query stops" in report.line()


def test_three_broker_runs_draw_network_faults_and_one_broker_runs_keep_their_plan():
    three = ChaosSettings(brokers=3).kinds()
    assert set(injector.NETWORK_KINDS) <= set(three)
    assert not set(injector.NETWORK_KINDS) & set(ChaosSettings(brokers=1).kinds())
    kinds = {f.kind for f in injector.plan(5, 12, three)}
    assert set(injector.NETWORK_KINDS) <= kinds


def test_python_worker_faults_hit_task_workers_not_the_drivers_data_source_runners():
    """The driver's own runners (planning, the writer's commit) are the driver: killing one stops
    the query by Spark's design, so the 'python worker' fault only picks task workers."""
    from integration_tests.chaos.injector import is_task_worker
    daemon = "/venv/bin/python3 -m pyspark.daemon"
    assert is_task_worker(daemon + " ", daemon + " ")
    preloaded = "/venv/bin/python3 -m kafka_eos.connectors.worker_daemon pyspark.worker"
    assert is_task_worker(preloaded, preloaded)
    for role in ("plan_data_source_read", "write_into_data_source", "lookup_data_sources"):
        runner = f"{daemon} pyspark.sql.worker.{role} "
        assert not is_task_worker(runner, runner)


def test_container_runs_draw_pause_and_disconnect_instead_of_broker_kills():
    kinds = ChaosSettings(container=True).kinds()
    assert {"pause", "disconnect"} <= set(kinds) and "broker" not in kinds
    assert not {"pause", "disconnect"} & set(ChaosSettings().kinds())
    assert {"pause", "disconnect"} <= {f.kind for f in injector.plan(3, 6, kinds)}
    with pytest.raises(ValueError, match="one broker"):
        ChaosSettings(container=True, brokers=3)
