"""``emit=offsetRanges`` (issue 27): the source hands the sink offset ranges and the sink task reads
and writes the records in one process. Exactly once across a driver killed after its decision,
and across one killed before it; nothing from aborted input. Real spark-submit, real broker."""
from __future__ import annotations

import pytest

from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import kill_group, run_to_completion, seed_input, start_job, wait_for
from kafka_eos.txn.sink_log import SinkLogReader

IDS = 3000
PARTITIONS = 4


@pytest.mark.parametrize("point", ["after_decision@1", "before_decision@1"])
def test_ranges_read_by_the_sink_are_exactly_once_across_a_driver_kill(bootstrap, tmp_path, point):
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("ranges")}
    seed_input(bootstrap, names["input"], IDS, partitions=PARTITIONS)
    (tmp_path / "faults").mkdir()
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(tmp_path / "checkpoint"), "--prefix", names["prefix"], "--max-offsets", "1000",
            "--emit-ranges"]
    log = tmp_path / "job.log"
    proc = start_job(args + ["--fault", point, "--fault-dir", str(tmp_path / "faults")], log)
    wait_for((tmp_path / "faults", point.split("@")[0] + ".*"), proc, 300, log)
    kill_group(proc)
    run_to_completion(args, log)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    reader = SinkLogReader(str(tmp_path / "checkpoint" / "kafka-eos-sink"))
    batches = [reader.get(b) for b in range(20) if reader.get(b) is not None]
    assert len(batches) >= 3, "the input took several batches"
    assert sum(h.records for record in batches for h in record.handles) == IDS, "the sinks read every committed id once"
