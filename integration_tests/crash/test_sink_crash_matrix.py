"""Crash matrix of the two-phase commit: the driver is SIGKILLed at each step, then restarted
from its checkpoint; every input id must end up exactly once in the read_committed output,
and nothing from aborted input transactions. Runs through real spark-submit (local[2,3])."""
from __future__ import annotations

import os
import signal

import pytest

from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, output_ids, unique
from integration_tests.pipeline_runs import (kill_group, run_to_completion,
                                             seed_input, start_job, wait_for)
from kafka_eos.txn.protocol.abort_tally import aborted_in
from kafka_eos.txn.log.sink_log import SinkLogReader
from kafka_eos.txn.log.start_sweeps import aborted_since

IDS = 3000


def job_args(bootstrap, tmp_path, names) -> list[str]:
    return ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"],
            "--max-offsets", "1000"]




@pytest.fixture
def pipeline(bootstrap, tmp_path):
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("crash")}
    seed_input(bootstrap, names["input"], IDS)
    (tmp_path / "faults").mkdir()
    return names


def sink_log(tmp_path) -> SinkLogReader:
    return SinkLogReader(str(tmp_path / "checkpoint" / "kafka-eos-sink"))


def batch_records(tmp_path, batch: int) -> int:
    return sum(h.records for h in sink_log(tmp_path).get(batch).handles)


STEPS = ("task_write", "before_decision", "after_decision", "between_end_txns", "after_end_txns")


def committed_before(tmp_path, batch: int) -> int:
    """The records of the batches before ``batch`` (all committed by the time ``batch`` runs)."""
    return sum(batch_records(tmp_path, b) for b in range(batch))


@pytest.mark.slow
def test_driver_killed_at_every_step_of_one_query_is_exactly_once(bootstrap, tmp_path):
    """The whole crash matrix in one query (make test): the driver is killed at each step of the
    commit in turn, batch 1 mid-write, batch 2 before its decision, ... batch 5 after its EndTxn
    round, each time restarted from the checkpoint (a fault point fires once per directory, so
    each restart runs on to the next); then run to the end. 6 spark-submits instead of 10."""
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("crash")}
    seed_input(bootstrap, names["input"], IDS)
    (tmp_path / "faults").mkdir()
    args = job_args(bootstrap, tmp_path, names)[:-1] + ["500"]  # 500 a batch: 6 batches and more
    plan = ",".join(f"{point}@{batch}" for batch, point in enumerate(STEPS, start=1))
    log = tmp_path / "job.log"
    for batch, point in enumerate(STEPS, start=1):
        proc = start_job(args + ["--fault", plan, "--fault-dir", str(tmp_path / "faults")], log)
        try:
            wait_for((tmp_path / "faults", f"{point}.*"), proc, 300, log)
            if point in ("before_decision", "after_decision"):  # pre-committed (maybe decided), not committed
                visible = sum(output_ids(bootstrap, names["output"]).values())
                assert visible == committed_before(tmp_path, batch), f"{point}@{batch} visible to read_committed"
                assert sum(output_ids(bootstrap, names["output"], "read_uncommitted").values()) > visible
        finally:
            kill_group(proc)
    run_to_completion(args + ["--fault", plan, "--fault-dir", str(tmp_path / "faults")], log)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    # batch 2's pre-committed transactions outlived the driver killed before its decision: the
    # restart's query start aborted them and recorded it (kafka_eos_transactions_aborted_total{reason="query_start"})
    assert aborted_since(str(tmp_path / "checkpoint" / "kafka-eos-sink"), 0) >= 1


@pytest.mark.chaos  # make test runs every step in one query (above); make matrix the after_decision cell
@pytest.mark.parametrize("point", [pytest.param(p, marks=pytest.mark.matrix) if p == "after_decision" else p
                                   for p in STEPS])
def test_driver_killed_then_restarted_is_exactly_once(point, bootstrap, pipeline, tmp_path):
    args = job_args(bootstrap, tmp_path, pipeline)
    log = tmp_path / "job.log"
    proc = start_job(args + ["--fault", f"{point}@1", "--fault-dir", str(tmp_path / "faults")], log)
    wait_for((tmp_path / "faults", f"{point}.*"), proc, 300, log)
    if point in ("before_decision", "after_decision"):
        # batch 1 is pre-committed (and maybe decided) but not committed: invisible to read_committed
        visible = output_ids(bootstrap, pipeline["output"])
        assert sum(visible.values()) == batch_records(tmp_path, 0)
        assert sum(output_ids(bootstrap, pipeline["output"], "read_uncommitted").values()) > sum(visible.values())
    kill_group(proc)
    run_to_completion(args, log)
    assert_exactly_once(check_exactly_once(bootstrap, pipeline["output"], IDS))


def test_executor_task_killed_mid_write_is_retried_exactly_once(bootstrap, pipeline, tmp_path):
    args = job_args(bootstrap, tmp_path, pipeline)
    log = tmp_path / "job.log"
    proc = start_job(args + ["--fault", "task_write@1", "--fault-dir", str(tmp_path / "faults")], log)
    marker = wait_for((tmp_path / "faults", "task_write.*"), proc, 300, log)
    os.kill(int(marker.suffix[1:]), signal.SIGKILL)  # the Python worker running the task
    assert proc.wait(400) == 0
    assert_exactly_once(check_exactly_once(bootstrap, pipeline["output"], IDS))
    # the killed attempt's transaction stayed open; the driver's sweep after batch 1's commit aborted it,
    # and batch 2's record reports it (what kafka_eos_transactions_aborted_total{reason="lingering"} counts)
    assert aborted_in(sink_log(tmp_path).get(2).metrics) == {"replay_duplicate": 0, "lingering": 1, "failed_batch": 0}


@pytest.mark.chaos  # a long fault run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_driver_down_longer_than_the_transaction_timeout_loses_nothing(tmp_path):
    """Decided transactions are aborted by the broker while the driver is down; the restart
    finds them lost and re-writes exactly those sink partitions from the same offsets."""
    import time

    from kafka_eos.connectors.dev.local_kafka import ClusterSettings
    from integration_tests.providers import local_broker

    with local_broker(ClusterSettings(transaction_max_timeout_ms=20_000)) as broker:
        names = {"input": unique("in"), "output": unique("out"), "prefix": unique("timeout")}
        seed_input(broker.bootstrap, names["input"], IDS)
        (tmp_path / "faults").mkdir()
        args = job_args(broker.bootstrap, tmp_path, names) + ["--transaction-timeout-ms", "15000"]
        log = tmp_path / "job.log"
        proc = start_job(args + ["--fault", "after_decision@1", "--fault-dir", str(tmp_path / "faults")], log)
        wait_for((tmp_path / "faults", "after_decision.*"), proc, 300, log)
        kill_group(proc)
        time.sleep(20)  # > transaction.timeout.ms: the broker aborts batch 1's decided transactions
        run_to_completion(args, log)
        assert sink_log(tmp_path).get(1).state == "committed"
        assert "was decided but not fully committed" in log.read_text()
        assert_exactly_once(check_exactly_once(broker.bootstrap, names["output"], IDS))
