"""Task attempts that outlive their task (issue 10, point 3), on a local-cluster master.

A zombie: the write task of batch 1 for one sink partition is paused (fault point
``task_start``, before ``init_transactions``) and its executor JVM is SIGKILLed; with
``spark.python.use.daemon=false`` its Python worker lives on. Spark runs the task again on the
other executor, batches 1 and 2 commit, batch 3 (same id slot as batch 1) pre-commits and the
driver is paused before its decision (``before_decision@3``). Then the zombie is released and,
once it is gone, the driver. Exactly once, the query ends cleanly, no TransactionLostError.
And: ``spark.speculation=true`` is refused before anything is written.
"""
from __future__ import annotations

import pytest

import os
import signal
import time
from pathlib import Path

from kafka_eos.connectors.dev.processes import cmdline
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, create_topic, read_all, unique
from integration_tests.pipeline_runs import (kill_group, seed_input, start_job,
                                             tail, wait_for)

IDS = 3000
MASTER = "local-cluster[2,1,1024]"


def _args(bootstrap: str, names: dict, tmp_path: Path, *extra: str) -> list[str]:
    return ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "ck"), "--prefix", unique("att"), "--max-offsets", "600",
            "--transaction-timeout-ms", "120000", *extra]


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.chaos  # a long fault run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_a_zombie_attempt_of_batch_1_does_not_fence_batch_3(bootstrap, tmp_path):
    names = {"input": unique("in"), "output": unique("out")}
    seed_input(bootstrap, names["input"], IDS)
    faults = tmp_path / "faults"
    faults.mkdir()
    log = tmp_path / "job.log"
    proc = start_job(_args(bootstrap, names, tmp_path, "--fault", "task_start@1,before_decision@3",
                           "--fault-dir", str(faults), "--conf", "spark.python.use.daemon=false"), log, MASTER)
    try:
        zombie = int(wait_for((faults, "task_start.*"), proc, 400, log).suffix[1:])
        executor = _parent(zombie)
        assert "CoarseGrainedExecutorBackend" in cmdline(executor), cmdline(executor)
        os.kill(executor, signal.SIGKILL)            # the executor dies; its Python worker lives on
        wait_for((faults, "before_decision.*"), proc, 400, log)
        assert Path(f"/proc/{zombie}").exists(), "the zombie Python worker did not survive its executor"
        (faults / "release-task_start").write_text("go")
        assert _wait_gone(zombie, 180), "the zombie did not finish"
        (faults / "release-before_decision").write_text("go")
        rc = proc.wait(500)
    finally:
        kill_group(proc)
        if 'zombie' in locals() and Path(f"/proc/{zombie}").exists():
            os.kill(zombie, signal.SIGKILL)
    text = log.read_text(errors="replace")
    assert rc == 0, f"the query failed ({rc}):\n{tail(log)}"
    assert "TransactionLostError" not in text, tail(log)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))


def test_speculation_is_refused_before_anything_is_written(bootstrap, tmp_path):
    names = {"input": unique("in"), "output": unique("out")}
    seed_input(bootstrap, names["input"], 300)
    create_topic(bootstrap, names["output"], partitions=3)
    log = tmp_path / "job.log"
    proc = start_job(_args(bootstrap, names, tmp_path, "--conf", "spark.speculation=true"), log, "local[2]")
    try:
        rc = proc.wait(400)
    finally:
        kill_group(proc)
    assert rc != 0, f"a query with spark.speculation=true ran:\n{tail(log)}"
    assert "spark.speculation=true is not supported" in log.read_text(errors="replace"), tail(log)
    assert read_all(bootstrap, names["output"], "read_uncommitted", idle_s=1.5) == []
