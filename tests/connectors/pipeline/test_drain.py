"""run --once as a drain (pyspark without availableNow for Python sources): when the run ends."""
from __future__ import annotations

from types import SimpleNamespace

from kafka_eos.connectors.pipeline.drain import drained


def query(progress):
    return SimpleNamespace(lastProgress=progress)


def test_a_trigger_that_planned_no_batch_ends_the_drain():
    idle = SimpleNamespace(batchId=7, durationMs={"latestOffset": 3, "triggerExecution": 4})
    assert drained(query(idle))


def test_a_batch_that_ran_does_not_end_it_nor_does_no_progress_yet():
    ran = SimpleNamespace(batchId=7, durationMs={"addBatch": 300, "latestOffset": 3, "walCommit": 5})
    assert not drained(query(ran))
    assert not drained(query(None))
