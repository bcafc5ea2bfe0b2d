"""Chaos runs. The short one runs in CI; `make chaos` runs the long ones (marker `chaos`)."""
from __future__ import annotations

import os

import pytest

from integration_tests.chaos.runner import ChaosSettings, run
from integration_tests.broker_containers import engine_unavailable_reason
from integration_tests.kafka_tools import assert_exactly_once

SEED = int(os.environ.get("CHAOS_SEED", "11"))


@pytest.mark.slow
@pytest.mark.long  # minutes: make long (CI, after make test)
def test_short_chaos_run_is_exactly_once(tmp_path, iptables):
    """CI's run, make test's case of each fault kind on a running query (issue 47) in one job: 3
    brokers and one fault of each kind (the plan takes every kind once first): the driver and a
    Python worker killed, a broker killed, hung, black-holed and on a lossy link; Spark's default
    startingOffsets=latest while the input is being written."""
    settings = ChaosSettings(records=20_000, faults=6, seed=SEED, brokers=3, live_start=True)
    assert len(settings.kinds()) == settings.faults, settings.kinds()
    assert_exactly_once(run(settings, tmp_path))


@pytest.mark.chaos
def test_long_chaos_run_single_broker(tmp_path):
    assert_exactly_once(run(ChaosSettings(records=200_000, faults=20, seed=SEED), tmp_path))


@pytest.mark.chaos
def test_long_chaos_run_started_at_latest_while_input_arrives(tmp_path):
    assert_exactly_once(run(ChaosSettings(records=200_000, faults=20, seed=SEED + 2, live_start=True), tmp_path))


@pytest.mark.chaos
def test_long_chaos_run_of_a_copy_started_at_latest(tmp_path):
    """A copy (emit=offsetRanges: the sink tasks read the records) through the same faults."""
    assert_exactly_once(run(ChaosSettings(records=200_000, faults=20, seed=SEED + 4, live_start=True,
                                          emit_ranges=True), tmp_path))


@pytest.mark.chaos
def test_long_chaos_run_three_brokers_and_standalone_spark(tmp_path):
    assert_exactly_once(run(ChaosSettings(records=200_000, faults=20, seed=SEED + 1, brokers=3,
                                          standalone=True), tmp_path))


@pytest.mark.chaos
def test_chaos_run_on_a_broker_container_paused_and_disconnected(tmp_path):
    """Driver and task kills with the broker container paused and cut off its network (no engine
    in CI: `make chaos` where docker/engine.sh gives one)."""
    reason = engine_unavailable_reason()
    if reason:
        pytest.skip(f"no container engine (run docker/engine.sh): {reason}")
    assert_exactly_once(run(ChaosSettings(records=20_000, faults=6, seed=SEED + 3, container=True), tmp_path))
