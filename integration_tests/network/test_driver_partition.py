"""The driver cut off from every broker for longer than transaction.timeout.ms while its
executors' tasks have pre-committed transactions open (issue 24: the re-write path under a
network partition rather than a kill).

A Spark standalone cluster (Master + 2 Workers) runs the query through spark-submit; the driver
is the spark-submit process tree, the executors are Worker-launched JVMs. The driver's tree alone
is cut off from the broker (``network_faults.driver_cut_off``) for ``CUT_S`` > the sink's
transaction.timeout.ms, at one of two moments of batch ``BATCH``:
- ``task_write``: a write task is paused mid-write; the cut starts, the task is released and the
  tasks pre-commit during the cut (the executors, outside the driver's process tree, still reach
  the broker), while the driver can neither check the output topics nor decide;
- ``after_decision``: the driver recorded its decision; the cut starts, it is released and its
  EndTxns cannot reach the broker.
Either way the broker aborts the batch's transactions on timeout; once the cut heals the driver's
commit finds them aborted (CompleteAbort), records the batch's partitions lost and the query stops
with ``TransactionLostError`` (the documented behaviour); the restart, as a supervisor would run
it, re-writes exactly the lost sink partitions. Counted: every id once in read_committed output,
nothing from aborted input transactions. Real broker, real Spark.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kafka_eos.connectors.dev.local_kafka import ClusterSettings
from kafka_eos.connectors.dev.processes import descendants
from kafka_eos.connectors.dev.standalone_spark import StandaloneSpark
from integration_tests import network_faults as faults
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import kill_group, seed_input, start_job, tail, wait_for
from integration_tests.providers import local_broker
from kafka_eos.txn.log.sink_log import SinkLogReader

IDS, BATCH = 3000, 1
TIMEOUT_MS = 10_000          # the sink's transaction.timeout.ms
CUT_S = 30                   # > TIMEOUT_MS + the broker's abort cleanup interval (1 s)
SETTINGS = ClusterSettings(transaction_max_timeout_ms=60_000)




def sink_states(checkpoint: Path, batch_id: int) -> list[dict]:
    """Every record the sink log holds for ``batch_id`` (each state is its own create-only file)."""
    found = []
    for path in sorted((checkpoint / "kafka-eos-sink").rglob("*")):
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(data, dict) and data.get("batch") == batch_id:
                found.append(data)
    return sorted(found, key=lambda d: d.get("seq", 0))


@pytest.mark.chaos  # ~3 min per case on 2 cores: `make chaos`
@pytest.mark.parametrize("point", ["task_write", "after_decision"])
def test_driver_cut_off_longer_than_the_transaction_timeout(tmp_path, iptables, point):
    with local_broker(SETTINGS) as broker, StandaloneSpark(workers=2) as spark:
        names = {"input": unique("in"), "output": unique("out"), "prefix": unique("cutoff")}
        seed_input(broker.bootstrap, names["input"], IDS)
        fault_dir, checkpoint, log = tmp_path / "faults", tmp_path / "checkpoint", tmp_path / "job.log"
        fault_dir.mkdir()
        args = ["--bootstrap", broker.bootstrap, "--input", names["input"], "--output", names["output"],
                "--checkpoint", str(checkpoint), "--prefix", names["prefix"], "--max-offsets", "1000",
                "--transaction-timeout-ms", str(TIMEOUT_MS)]
        proc = start_job(args + ["--fault", f"{point}@{BATCH}", "--fault-dir", str(fault_dir)], log,
                         master=spark.master_url)
        try:
            wait_for((fault_dir, f"{point}.*"), proc, 300, log)
            with faults.driver_cut_off(broker.cluster, proc.pid) as cut:
                cut_at = time.time()
                executors = {p for n in (1, 2) for e in spark.executor_pids(n) for p in (e, *descendants(e))}
                (fault_dir / "release").touch()
                time.sleep(CUT_S)
                during = [d.get("state") for d in sink_states(checkpoint, BATCH)]
                intact = cut.intact()
            healed_at = time.time()
            first_rc = proc.wait(240)
            stopped_s = time.time() - healed_at
        finally:
            kill_group(proc)
        first_log = log.read_text(errors="replace")
        decided_s = (checkpoint / "kafka-eos-sink" / f"{BATCH}.0.json").stat().st_mtime - cut_at
        print(f"driver-cut figures ({point}): {len(cut.pids)} driver processes cut {CUT_S}s; {len(executors)} executor "
              f"processes not cut; batch {BATCH} states during the cut {during}, decided "
              f"{decided_s:.1f}s after the cut began; first run exit {first_rc}, {stopped_s:.1f}s after the heal")
        assert intact, "the cut was undone during the test (another test session's cleanup?)"
        assert first_rc != 0 and "TransactionLostError" in first_log, \
            f"expected the query to stop with TransactionLostError ({first_rc}):\n{tail(log)}"
        assert executors and not executors & set(cut.pids), f"executors {executors} cut with the driver {cut.pids}"
        if point == "after_decision":
            assert during == ["decided"], f"batch {BATCH} was not decided during the cut: {during}"

        second = start_job(args, log, master=spark.master_url)    # the supervisor's restart
        try:
            rc = second.wait(400)
        finally:
            kill_group(second)
        assert rc == 0, f"restart failed ({rc}):\n{tail(log)}"
        report = check_exactly_once(broker.bootstrap, names["output"], IDS)
    states = sink_states(checkpoint, BATCH)
    lost = sorted({p for d in states for p, s in (d.get("status") or {}).items() if s == "lost"})
    print(f"driver-cut figures ({point}): batch {BATCH} states {[d.get('state') for d in states]}, "
          f"lost partitions {lost}; {report.line()}")
    assert lost, f"no partition of batch {BATCH} recorded lost: {states}"
    assert SinkLogReader(str(checkpoint / "kafka-eos-sink")).get(BATCH).state == "committed"
    assert_exactly_once(report)
