"""``maxTasksPerBatch`` (issue 27): a batch of many Kafka partitions read by fewer tasks, each task
one sink transaction, stays exactly once across a driver killed after its decision (the replay
plans the same groups). Real spark-submit, real broker."""
from __future__ import annotations

from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import kill_group, run_to_completion, seed_input, start_job, wait_for
from kafka_eos.txn.sink_log import SinkLogReader

IDS = 3000
PARTITIONS = 6
TASKS = 2


def test_grouped_partitions_killed_after_the_decision_are_exactly_once(bootstrap, tmp_path):
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("groups")}
    seed_input(bootstrap, names["input"], IDS, partitions=PARTITIONS)
    (tmp_path / "faults").mkdir()
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"], "--max-offsets", "1000",
            "--source-option", f"maxTasksPerBatch={TASKS}"]
    log = tmp_path / "job.log"
    proc = start_job(args + ["--fault", "after_decision@1", "--fault-dir", str(tmp_path / "faults")], log)
    wait_for((tmp_path / "faults", "after_decision.*"), proc, 300, log)
    kill_group(proc)
    run_to_completion(args, log)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    reader = SinkLogReader(str(tmp_path / "checkpoint" / "kafka-eos-sink"))
    batches = [reader.get(b) for b in range(20) if reader.get(b) is not None]
    assert len(batches) >= 3, "the input took several batches"
    assert {len(record.handles) for record in batches} == {TASKS}, "one transaction per task, TASKS per batch"
