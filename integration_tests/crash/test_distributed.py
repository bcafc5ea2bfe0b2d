"""The exactly-once pipeline on a Spark standalone cluster (Master + 2 Workers via spark-class,
submitted with spark-submit), with the Worker running a write task killed mid-batch."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.dev.standalone_spark import StandaloneSpark
from kafka_eos.connectors.dev.processes import descendants
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import seed_input, start_job, wait_for

IDS = 3000


@pytest.mark.chaos  # a long fault run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_worker_killed_mid_batch_on_a_standalone_cluster(bootstrap, tmp_path):
    names = {"input": unique("in"), "output": unique("out")}
    seed_input(bootstrap, names["input"], IDS)
    faults = tmp_path / "faults"
    faults.mkdir()
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "ck"), "--prefix", unique("dist"), "--max-offsets", "1000",
            "--fault", "task_write@1", "--fault-dir", str(faults)]
    with StandaloneSpark(workers=2) as cluster:
        log = tmp_path / "job.log"
        proc = start_job(args, log, master=cluster.master_url)
        marker = wait_for((faults, "task_write.*"), proc, 300, log)
        task_pid = int(marker.suffix[1:])
        worker = next(n for n in (1, 2) if any(task_pid == e or task_pid in descendants(e)
                                                for e in cluster.executor_pids(n)))
        cluster.kill_worker(worker)        # the Worker and its executor die mid-write
        cluster.start_worker(worker)
        assert proc.wait(500) == 0, log.read_text()[-3000:]
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
