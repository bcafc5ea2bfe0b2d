"""worker_gc: the first call in a process freezes what it holds; later calls do nothing.

Each case runs in its own interpreter: freezing is process-wide and would outlive the test."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import gc, json, time
import pyspark.worker, pyarrow, confluent_kafka, kafka_eos.connectors.datasource
from kafka_eos.connectors import worker_gc
def full_pass_ms():
    started = time.perf_counter()
    gc.collect()
    return (time.perf_counter() - started) * 1000
before = full_pass_ms()
worker_gc.freeze_loaded()
frozen = gc.get_freeze_count()
garbage = [[] for _ in range(1000)]
for item in garbage:
    item.append(item)  # cycles made after the freeze: collected as before
del garbage, item
collected = gc.collect()
worker_gc.freeze_loaded()
print(json.dumps({"before_ms": before, "after_ms": full_pass_ms(), "frozen": frozen,
                  "frozen_again": gc.get_freeze_count(), "collected": collected}))
"""


@pytest.fixture(scope="module")
def out() -> dict:
    """One probe run, read by both tests."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_first_call_freezes_what_the_process_holds_and_later_collections_skip_it(out):
    assert out["frozen"] > 20_000  # pyspark, pyarrow, confluent-kafka and kafka-eos's objects
    assert out["after_ms"] < out["before_ms"] / 5


def test_cycles_made_after_the_freeze_are_still_collected_and_a_second_call_freezes_nothing(out):
    assert out["collected"] >= 1000
    assert out["frozen_again"] == out["frozen"]
