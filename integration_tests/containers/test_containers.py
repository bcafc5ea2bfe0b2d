"""The testcontainers provider for real: kafka-eos against a broker container built here.

The engine is the one ``docker/engine.sh`` provides (``make test`` runs it first); where none can
be had these tests skip and the rest of the suite runs on the JVM-process broker. Exactly-once is
counted on the container broker: the end-to-end query, and a driver SIGKILLed between the tasks'
pre-commits and the driver's decision, then restarted from its checkpoint.
"""
from __future__ import annotations

import pytest

from integration_tests.broker_containers import ContainerUnavailable, engine_unavailable_reason
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, output_ids, unique
from integration_tests.pipeline_runs import kill_group, run_to_completion, seed_input, start_job, wait_for
from integration_tests.providers import Broker, docker_broker
from integration_tests.crash.test_sink_crash_matrix import batch_records, job_args
from integration_tests.sink.test_sink_e2e import run_query

IDS = 1400  # two 2PC batches of maxOffsetsPerTrigger 700


@pytest.fixture(scope="module")
def container_broker() -> Broker:
    reason = engine_unavailable_reason()
    if reason:
        pytest.skip(f"no container engine (run docker/engine.sh): {reason}")
    try:
        context = docker_broker()
        broker = context.__enter__()
    except ContainerUnavailable as exc:  # e.g. no debootstrap to build the image with
        pytest.skip(str(exc))
    try:
        yield broker
    finally:
        context.__exit__(None, None, None)


def test_the_broker_runs_in_a_container_built_here(container_broker):
    assert container_broker.provider == "docker"
    assert container_broker.container.image.startswith(("localhost/kafka-eos-broker:", "apache/kafka"))
    assert "Kafka Server started" in container_broker.container.engine("logs", container_broker.container.name)


def test_end_to_end_each_id_exactly_once_on_a_container_broker(spark, container_broker, tmp_path):
    bootstrap = container_broker.bootstrap
    source, out = unique("in"), unique("out")
    seed_input(bootstrap, source, IDS)
    query = run_query(spark, bootstrap, source, out, tmp_path / "ck", unique("ctr-e2e"))
    assert query.exception() is None
    assert_exactly_once(check_exactly_once(bootstrap, out, IDS))


def test_driver_killed_before_the_decision_on_a_container_broker(container_broker, tmp_path):
    bootstrap = container_broker.bootstrap
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique("ctr-crash")}
    ids = 2000  # two batches of --max-offsets 1000: the kill lands in the last one
    seed_input(bootstrap, names["input"], ids)
    (tmp_path / "faults").mkdir()
    args = job_args(bootstrap, tmp_path, names)
    log = tmp_path / "job.log"
    proc = start_job(args + ["--fault", "before_decision@1", "--fault-dir", str(tmp_path / "faults")], log)
    wait_for((tmp_path / "faults", "before_decision.*"), proc, 300, log)
    # batch 1 is pre-committed in the container broker but not decided: invisible to read_committed
    assert sum(output_ids(bootstrap, names["output"]).values()) == batch_records(tmp_path, 0)
    kill_group(proc)
    run_to_completion(args, log)
    assert_exactly_once(check_exactly_once(bootstrap, names["output"], ids))
