"""Faults only containers give, on a broker container attached to a network of its own: the
broker frozen whole by the engine (``pause``/``unpause``: the cgroup freezer, JVM and sockets
alike) and the broker cut off its network (``network disconnect``/``connect``: a partition with a
real separate address, not a loopback firewall rule). The running query rides out both without a
restart and every input id is in the read_committed output exactly once."""
from __future__ import annotations

import time
import uuid

import pytest

from integration_tests.containers import ContainerUnavailable, engine_unavailable_reason, use_engine
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, unique
from integration_tests.pipeline_runs import kill_group, seed_input, start_job, tail, wait_for
from integration_tests.providers import Broker, docker_broker_on
from integration_tests.test_sink_crash_matrix import job_args

IDS = 3000
HOLD_S = 20


@pytest.fixture(scope="module")
def networked_broker():
    reason = engine_unavailable_reason()
    if reason:
        pytest.skip(f"no container engine (run docker/engine.sh): {reason}")
    use_engine()
    import docker
    client = docker.from_env()
    network = client.networks.create(f"kafka-eos-{uuid.uuid4().hex[:8]}", driver="bridge")
    try:
        try:
            context = docker_broker_on(network.name)
            broker = context.__enter__()
        except ContainerUnavailable as exc:
            pytest.skip(str(exc))
        try:
            yield broker, network.name
        finally:
            context.__exit__(None, None, None)
    finally:
        network.remove()


def assert_unreachable(bootstrap: str) -> None:
    """The fault took: a new client gets no metadata from the broker."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    with pytest.raises(KafkaException):
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=3)


def hold(broker: Broker, network: str, fault: str) -> None:
    engine, name = broker.container.engine, broker.container.name
    started = time.monotonic()
    if fault == "pause":
        engine("pause", name)
        assert_unreachable(broker.bootstrap)
        time.sleep(max(0.0, HOLD_S - (time.monotonic() - started)))
        engine("unpause", name)
    else:
        engine("network", "disconnect", network, name)
        assert_unreachable(broker.bootstrap)
        time.sleep(max(0.0, HOLD_S - (time.monotonic() - started)))
        engine("network", "connect", network, name)


# Known: pausing the single broker longer than its session timeout (9 s) fences and unfences it,
# bumping every leader epoch; a long-lived librdkafka AdminClient then gets FENCED_LEADER_EPOCH /
# "No leaders found" from list_offsets for minutes (seen 176 s) while a new client answers at once.
# The source's offset lookup gives up after 120 s, so the pause case failed in 2 of 6 runs.
@pytest.mark.chaos  # each 1-5 min on 2 shared cores: `make chaos`
@pytest.mark.parametrize("fault", ["pause", "disconnect"])
def test_the_query_rides_out_a_container_fault(fault, networked_broker, tmp_path):
    broker, network = networked_broker
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique(f"ctr-{fault}")}
    seed_input(broker.bootstrap, names["input"], IDS)
    args = job_args(broker.bootstrap, tmp_path, names)
    log = tmp_path / "job.log"
    proc = start_job(args, log)
    try:
        wait_for((tmp_path / "checkpoint" / "kafka-eos-sink", "[0-9]*.json"), proc, 300, log)
        hold(broker, network, fault)
        assert proc.wait(600) == 0, f"the query stopped after the {fault}:\n{tail(log)}\n{broker.container.log_tail(80)}"
    finally:
        kill_group(proc)
    assert_exactly_once(check_exactly_once(broker.bootstrap, names["output"], IDS))
