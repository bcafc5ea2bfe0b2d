"""One writer per sink log, bound to its checkpoint (issue 10, point 4).

Two drivers on one checkpoint must not both decide a batch: the sink log's records are
create-only, so the run that comes second to a batch's record stops (SinkLogConflictError)
instead of overwriting the other's decision. A sink log met with another checkpoint (a new
query id) is refused before anything is written. Real broker, real spark-submit.
"""
from __future__ import annotations

import pytest

from integration_tests.kafka_tools import (assert_exactly_once, check_exactly_once, create_topic, ongoing_transactions,
                                           output_ids, unique)
from integration_tests.pipeline_runs import (kill_group, run_to_completion,
                                             seed_input, start_job, tail, wait_for)

IDS = 3000


@pytest.fixture
def names(bootstrap):
    found = {"input": unique("in"), "output": unique("out"), "prefix": unique("writers")}
    seed_input(bootstrap, found["input"], IDS)
    return found


def job_args(bootstrap, names, checkpoint, *extra: str) -> list[str]:
    return ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(checkpoint), "--prefix", names["prefix"], "--max-offsets", "1000", *extra]


def faults(tmp_path, name: str, point: str) -> list[str]:
    directory = tmp_path / name  # a fault point fires once per directory: one directory per run
    directory.mkdir()
    return ["--fault", point, "--fault-dir", str(directory)]


@pytest.mark.chaos  # a long fault run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_a_stalled_run_cannot_overwrite_the_decision_of_a_run_that_took_over(bootstrap, names, tmp_path):
    args = job_args(bootstrap, names, tmp_path / "checkpoint")
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    run_a = start_job(args + faults(tmp_path, "faults-a", "before_decision@1"), log_a)
    wait_for((tmp_path / "faults-a", "before_decision.*"), run_a, 300, log_a)
    run_b = start_job(args + faults(tmp_path, "faults-b", "after_end_txns@1"), log_b)
    wait_for((tmp_path / "faults-b", "after_end_txns.*"), run_b, 300, log_b)
    kill_group(run_b)                              # B committed batch 1, died before Spark's commit log
    (tmp_path / "faults-a" / "release").write_text("go")
    try:
        rc_a = run_a.wait(300)
    finally:
        kill_group(run_a)
    run_to_completion(args, tmp_path / "clean.log")
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    assert rc_a != 0 and "took over" in log_a.read_text(errors="replace"), tail(log_a)


@pytest.mark.long  # minutes: make long (CI, after make test)
def test_a_new_checkpoint_with_an_old_sink_log_is_refused_before_anything_is_written(bootstrap, names, tmp_path):
    sink_log = str(tmp_path / "shared-sink-log")
    run_to_completion(job_args(bootstrap, names, tmp_path / "ck1", "--sink-log-location", sink_log),
                      tmp_path / "first.log")
    second = {**names, "output": create_topic(bootstrap, unique("out2"), partitions=2)}
    log = tmp_path / "second.log"
    proc = start_job(job_args(bootstrap, second, tmp_path / "ck2", "--sink-log-location", sink_log), log)
    try:
        rc = proc.wait(400)
    finally:
        kill_group(proc)
    assert rc != 0 and "belongs to the query" in log.read_text(errors="replace"), tail(log)
    assert sum(output_ids(bootstrap, second["output"], "read_uncommitted").values()) == 0


def open_sink_partitions(bootstrap: str, prefix: str) -> set[int]:
    """Sink partitions (``<prefix>-[<owner>-]<sink partition>-<slot>`` ids) with an Ongoing transaction."""
    import re

    ids = ongoing_transactions(bootstrap)
    return {int(m[1]) for m in (re.match(rf"^{re.escape(prefix)}-(?:[0-9a-f]{{8}}-)?(\d+)-\d+$", i) for i in ids) if m}


@pytest.mark.chaos  # a long run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_a_dead_runs_open_transactions_are_aborted_at_query_start(bootstrap, names, tmp_path):
    """A run with 4 sink partitions dies with batch 1 pre-committed; the restart has 2, so no task
    of it re-initialises ids of sink partitions 2 and 3: the query-start cleanup must end them
    before the first batch (they would hold back read_committed readers of those partitions)."""
    args = job_args(bootstrap, names, tmp_path / "checkpoint")
    first = start_job(args + ["--repartition", "4"] + faults(tmp_path, "faults-1", "before_decision@1"),
                      tmp_path / "first.log")
    wait_for((tmp_path / "faults-1", "before_decision.*"), first, 300, tmp_path / "first.log")
    kill_group(first)
    assert open_sink_partitions(bootstrap, names["prefix"]) == {0, 1, 2, 3}
    log = tmp_path / "restart.log"
    restart = start_job(args + ["--repartition", "2"] + faults(tmp_path, "faults-2", "before_decision@1"), log)
    try:
        wait_for((tmp_path / "faults-2", "before_decision.*"), restart, 300, log)
        left = open_sink_partitions(bootstrap, names["prefix"])   # the restart's own batch 1 is open
        assert left <= {0, 1}, left
        (tmp_path / "faults-2" / "release").write_text("go")
        assert restart.wait(300) == 0, tail(log)
    finally:
        kill_group(restart)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
