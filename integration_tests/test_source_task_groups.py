"""``maxTasksPerBatch`` (issue 27): a batch of many Kafka partitions read by fewer tasks, each task
one sink transaction, stays exactly once across a driver killed after its decision (the replay
plans the same groups). Real spark-submit, real broker."""
from __future__ import annotations

from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import killed_at_then_finished, seed_input

IDS = 3000
PARTITIONS = 6
TASKS = 2


def test_grouped_partitions_killed_after_the_decision_are_exactly_once(bootstrap, tmp_path):
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("groups")}
    seed_input(bootstrap, names["input"], IDS, partitions=PARTITIONS)
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"], "--max-offsets", "1000",
            "--source-option", f"maxTasksPerBatch={TASKS}"]
    batches = killed_at_then_finished(args, "after_decision@1", tmp_path, tmp_path / "job.log")
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    assert len(batches) >= 3, "the input took several batches"
    assert {len(record.handles) for record in batches} == {TASKS}, "one transaction per task, TASKS per batch"
