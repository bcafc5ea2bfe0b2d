"""A backlog read within ``maxOffsetsPerTrigger``, across a driver killed mid-run: every batch of the
offset log admits at most the cap, before and after the restart, and every id lands exactly once.

The cell every pyspark of ``make matrix`` runs (on 4.0/4.1 the source keeps its own start and the
job's availableNow is a drain: ``connectors.available_now_*``); on 4.3 it is a ``make chaos`` case.
"""
from __future__ import annotations

import json

import pytest

from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import kill_group, run_to_completion, seed_input, start_job, wait_for
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.offsets import model

IDS = 200_000
CAP = 20_000


def batch_sizes(checkpoint) -> list[int]:
    """Offsets admitted by each batch of the offset log (batch 0 from the start it records)."""
    reader = CheckpointReader(str(checkpoint))
    sizes, before = [], None
    for batch in reader.offset_batches():
        entry = reader.offsets(batch)
        assert entry is not None, f"batch {batch}: no offset-log entry"
        stored = json.loads(entry.sources[0])
        end = model.decode(stored)
        start = model.planned_start(stored) if before is None else before
        assert start is not None, f"batch {batch}: no start recorded"
        sizes.append(sum(end[tp] - start.get(tp, 0) for tp in end))
        before = end
    return sizes


@pytest.mark.matrix
@pytest.mark.chaos
def test_a_backlog_is_read_in_capped_batches_across_a_driver_kill(bootstrap, tmp_path, record_property):
    names = {"input": unique("backlog-in"), "output": unique("backlog-out"), "prefix": unique("backlog")}
    seed_input(bootstrap, names["input"], IDS, partitions=4)
    checkpoint = tmp_path / "checkpoint"
    args = ["--bootstrap", bootstrap, "--input", names["input"], "--output", names["output"],
            "--checkpoint", str(checkpoint), "--prefix", names["prefix"], "--max-offsets", str(CAP)]
    log = tmp_path / "job.log"
    proc = start_job(args, log)
    try:
        wait_for((checkpoint / "commits", "2"), proc, 300, log)  # batches 0-2 committed, the next running
    finally:
        kill_group(proc)
    killed_at = len(CheckpointReader(str(checkpoint)).offset_batches())
    run_to_completion(args, log, timeout=600)
    sizes = batch_sizes(checkpoint)
    assert killed_at >= 3 and len(sizes) > killed_at, f"the restart planned more batches: {sizes}"
    assert all(0 < n <= CAP for n in sizes[:-1]) and 0 <= sizes[-1] <= CAP, f"a batch over the cap: {sizes}"
    assert len(sizes) >= IDS // CAP, f"{IDS} records (and their markers) in batches of at most {CAP}: {sizes}"
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], IDS))
    for name, value in {"ids": IDS, "batches": len(sizes), "killed_after_batches": killed_at,
                        "largest_batch": max(sizes), "kills": 1}.items():
        record_property(name, value)  # the figures make matrix reports (build/test-results/matrix-*.xml)
