"""A re-write must re-write the same rows (issue 10, point 2).

A batch is decided, half committed, and the driver stays down past transaction.timeout.ms, so
the broker aborts the rest: the restart re-writes the lost sink partitions from the same
offsets. With a non-deterministic layout (repartition on a rand() column) the replay puts other
rows in those partitions: the sink must either end exactly once or refuse with
ReplayMismatchError - never exit 0 with ids lost or duplicated. After a refusal, the way on it names
(``kafka-eos accept-loss``) lets the restart finish with exactly the accepted records missing and
none duplicated. Real broker, real spark-submit.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kafka_eos.connectors.dev.local_kafka import ClusterSettings
from kafka_eos.connectors.spark_harness import python_env
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import kill_group, seed_input, start_job, tail, wait_for
from integration_tests.providers import local_broker

IDS = 3000


@pytest.mark.chaos  # a long fault run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_non_deterministic_rewrite_of_a_lost_batch_is_exactly_once_or_refused(tmp_path):
    with local_broker(ClusterSettings(transaction_max_timeout_ms=20_000)) as broker:
        names = {"input": unique("in"), "output": unique("out"), "prefix": unique("replay")}
        seed_input(broker.bootstrap, names["input"], IDS)
        (tmp_path / "faults").mkdir()
        args = ["--bootstrap", broker.bootstrap, "--input", names["input"], "--output", names["output"],
                "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"],
                "--max-offsets", "1000", "--layout", "rand", "--transaction-timeout-ms", "15000"]
        log = tmp_path / "job.log"
        proc = start_job(args + ["--fault", "between_end_txns@1", "--fault-dir", str(tmp_path / "faults")], log)
        wait_for((tmp_path / "faults", "between_end_txns.*"), proc, 300, log)
        kill_group(proc)
        time.sleep(20)  # > transaction.timeout.ms: the broker aborts batch 1's uncommitted transactions

        restart = start_job(args, log)
        rc = restart.wait(400)
        report = check_exactly_once(broker.bootstrap, names["output"], IDS)
        if rc == 0:
            assert_exactly_once(report)
            return
        from kafka_eos.txn.log.sink_log import SinkLogReader
        text = log.read_text(errors="replace")
        assert "ReplayMismatchError" in text and "batch 1" in text, tail(log)
        assert "non-deterministic" in text, tail(log)
        # the refusal commits nothing of the re-write: no id twice, and batch 1 stays decided, not committed
        assert report.duplicated == 0 and report.aborted_input == 0 and report.before_start == 0, report.line()
        sink_log = str(tmp_path / "checkpoint" / "kafka-eos-sink")
        assert SinkLogReader(sink_log).get(1).state == "decided"
        assert report.records < IDS  # nothing after batch 1 was committed either
        assert "kafka-eos accept-loss --batch 1" in text, tail(log)

        # the way on the refusal names: accept the loss of batch 1's lost partitions, once, then restart
        accepted = subprocess.run([sys.executable, "-m", "kafka_eos.connectors.cli", "accept-loss", "--sink-log",
                                   sink_log, "--batch", "1"], env=python_env(), capture_output=True, text=True)
        assert accepted.returncode == 0, accepted.stderr
        dropped = int(SinkLogReader(sink_log).get(1).metrics["accepted_lost_records"])
        assert f"without {dropped} records" in accepted.stdout and dropped > 0, accepted.stdout
        assert start_job(args, log).wait(400) == 0, tail(log)
        after = check_exactly_once(broker.bootstrap, names["output"], IDS)
        # exactly the accepted records are missing; nothing is duplicated; the query went on to the end
        assert (after.lost, after.duplicated, after.aborted_input, after.before_start) == (dropped, 0, 0, 0), after.line()
