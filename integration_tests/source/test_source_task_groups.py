"""A batch's tasks (issues 27 and 45): by default a batch of many Kafka partitions is read in as
many tasks as the cluster has slots, whole ranges grouped, each task one sink transaction; the
count is recorded on the batch's end, so a batch replayed on a cluster with more slots (driver
killed before its decision, restarted on local[3]) is rebuilt in the tasks it was planned with,
and exactly once. Real spark-submit, real broker."""
from __future__ import annotations

import json

import pytest

from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import killed_at_then_finished, seed_input

IDS = 3000
PARTITIONS = 6


@pytest.mark.long  # minutes: make long (CI, after make test)
def test_default_tasks_are_the_slots_and_a_replay_keeps_the_recorded_ones(bootstrap, tmp_path):
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("groups")}
    seed_input(bootstrap, names["input"], IDS, partitions=PARTITIONS)
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"], "--max-offsets", "1000"]
    batches = killed_at_then_finished(args, "before_decision@1", tmp_path, tmp_path / "job.log",
                                      restart_master="local[3,3]")
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    handles = [len(record.handles) for record in batches]
    assert len(handles) >= 3 and handles[:2] == [2, 2] and set(handles[2:]) == {3}, (
        f"batches 0 and 1 planned on local[2] (batch 1 replayed on local[3] in its 2 tasks), later ones on "
        f"local[3]: {handles}")
    ends = [json.loads((tmp_path / "checkpoint" / "offsets" / str(b)).read_text().splitlines()[-1])
            for b in range(len(handles))]
    assert [end["tasks"] for end in ends] == handles
