"""The core exactly-once proofs against each broker kafka-eos is tested on (issue #26, points 1
and 5a): Kafka 3.7 and 3.9 (transactions v1 only), the pinned 4.x formatted with
``transaction.version=0`` and the pinned 4.x at its default ``transaction.version=2`` (the session
broker). One broker per cell, started from the same local-cluster code (``ClusterSettings
.kafka_version`` / ``.transaction_version``) and shared by the cell's tests.

Proofs per cell: the end-to-end run; the driver killed before and after the decision, then
restarted; a decided transaction aborted by the broker's timeout and re-written; a dead run's
lingering transaction aborted at the query start. ``make test`` keeps one case per extra broker
(the query-start run: the cheapest whole query, counted exactly once); the rest run under ``make chaos``.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, output_ids, unique
from integration_tests.pipeline_runs import kill_group, run_to_completion, seed_input, start_job, wait_for
from integration_tests.providers import local_broker
from integration_tests.crash.test_sink_crash_matrix import batch_records, job_args
from integration_tests.sink.test_sink_e2e import run_query
from integration_tests.sink.test_sink_e2e import test_end_to_end_each_id_exactly_once as end_to_end_proof
from integration_tests.sink.test_sink_query_start import (
    test_a_dead_runs_transaction_is_aborted_before_the_first_batch_is_decided as lingering_abort_proof)
from integration_tests.txn.test_txn_kafka import timeout_abort_is_reported_lost_and_rewritten
from kafka_eos.connectors.dev.local_kafka import ClusterSettings


@dataclass(frozen=True)
class Cell:
    name: str
    version: tuple[int, int]           # what the broker's ApiVersions say it is (kafka-python's inference)
    transaction_version: int            # the finalized transaction.version feature (0 = not finalized)
    settings: ClusterSettings | None    # None: the session broker (the pinned 4.x, its defaults)


CELLS = [Cell("kafka-3.7", (3, 7), 0, ClusterSettings(kafka_version="3.7.2")),
         Cell("kafka-3.9", (3, 9), 0, ClusterSettings(kafka_version="3.9.1")),
         Cell("kafka-4-tv0", (4, 2), 0, ClusterSettings(transaction_version=0)),
         Cell("kafka-4-tv2", (4, 2), 2, None)]
OLDER = "3.6.2"  # refused at the query start


def fast(cell: Cell):
    """The cell's `make test` case, for an extra broker; the session broker runs it already in
    test_sink_query_start."""
    return pytest.param(cell, id=cell.name, marks=[pytest.mark.chaos] if cell.settings is None else [])


def slow(cell: Cell):
    return pytest.param(cell, id=cell.name, marks=[pytest.mark.chaos])


@pytest.fixture(scope="module")
def on_cell(request):
    """(the cell, its broker's bootstrap): one broker per cell, stopped once the cell's tests ran
    (the module-scoped parametrization groups them)."""
    cell: Cell = request.param
    if cell.settings is None:
        yield cell, request.getfixturevalue("broker").bootstrap
        return
    with local_broker(cell.settings) as broker:
        yield cell, broker.bootstrap


def cells(mark):
    return pytest.mark.parametrize("on_cell", [mark(c) for c in CELLS], indirect=True, scope="module")


def described(bootstrap: str) -> tuple[tuple[int, int], int]:
    """The broker's version as its ApiVersions tell it, and its finalized transaction.version."""
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        version = admin._manager.broker_version_data.broker_version[:2]
        features = admin.describe_features()
        return version, features.get("transaction.version", {}).get("finalized", (0, 0))[1]
    finally:
        admin.close()


@cells(slow)
def test_end_to_end_each_id_exactly_once(on_cell, spark, tmp_path):
    end_to_end_proof(spark, on_cell[1], tmp_path)


@cells(slow)
@pytest.mark.parametrize("point", ["before_decision", "after_decision"])
def test_driver_killed_then_restarted_is_exactly_once(on_cell, point, tmp_path):
    (_, bootstrap), ids = on_cell, 3000
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("crash")}
    seed_input(bootstrap, names["input"], ids)
    (tmp_path / "faults").mkdir()
    args, log = job_args(bootstrap, tmp_path, names), tmp_path / "job.log"
    proc = start_job(args + ["--fault", f"{point}@1", "--fault-dir", str(tmp_path / "faults")], log)
    wait_for((tmp_path / "faults", f"{point}.*"), proc, 900, log)  # a chaos case: room for a loaded machine
    visible = output_ids(bootstrap, names["output"])
    assert sum(visible.values()) == batch_records(tmp_path, 0)  # batch 1 pre-committed, not committed
    kill_group(proc)
    run_to_completion(args, log)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], ids))


@cells(slow)
def test_broker_timeout_abort_is_reported_lost_and_rewritten(on_cell, tmp_path):
    timeout_abort_is_reported_lost_and_rewritten(on_cell[1], tmp_path)


@cells(fast)
def test_a_dead_runs_transaction_is_aborted_at_the_query_start(on_cell, spark, tmp_path):
    """The cell's `make test` case: a whole query (start checks, lingering abort, 2PC batch) counted
    exactly once, on the broker the cell claims."""
    cell, bootstrap = on_cell
    assert described(bootstrap) == (cell.version, cell.transaction_version)
    lingering_abort_proof(spark, bootstrap, tmp_path)


@pytest.mark.chaos  # a broker start of its own: `make chaos`
def test_a_broker_older_than_3_7_is_refused_at_the_query_start(spark, tmp_path):
    with local_broker(ClusterSettings(kafka_version=OLDER)) as broker:
        source, out = unique("in"), unique("out")
        seed_input(broker.bootstrap, source, 10)
        query = run_query(spark, broker.bootstrap, source, out, tmp_path / "ck", unique("old"))
        assert query.exception() is not None
        message = str(query.exception())
        assert "Kafka broker 1 is Kafka 3.6 (by its ApiVersions)" in message, message
        assert "upgrade the cluster to 3.7 or later" in message
        assert sum(output_ids(broker.bootstrap, out).values()) == 0
