"""Faults only containers give, on a broker container attached to a bridge network of its own:
``pause`` freezes the broker whole (the engine's cgroup freezer: JVM and sockets alike, and with
them the KRaft controller in the same process) and ``disconnect`` cuts it off its network (a
partition with a real separate address, not a loopback firewall rule); each is held, then healed.

One owner for the container-fault test (``test_containers_faults.py``) and the chaos runner
(``--container``): where no engine answers, ``networked_broker`` raises ``ContainerUnavailable``
with the reason (the callers skip, naming it).
"""
from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from typing import Iterator

from integration_tests.broker_containers import ContainerUnavailable, engine_unavailable_reason, use_engine
from integration_tests.providers import Broker, docker_broker_on

KINDS = ("pause", "disconnect")


@contextmanager
def networked_broker() -> Iterator[tuple[Broker, str]]:
    """A broker container on a new bridge network; yields (broker, network name), removes both."""
    reason = engine_unavailable_reason()
    if reason:
        raise ContainerUnavailable(f"no container engine (run docker/engine.sh): {reason}")
    use_engine()
    import docker
    network = docker.from_env().networks.create(f"kafka-eos-{uuid.uuid4().hex[:8]}", driver="bridge")
    try:
        with docker_broker_on(network.name) as broker:
            yield broker, network.name
    finally:
        network.remove()


def assert_unreachable(bootstrap: str) -> None:
    """The fault took: a new client gets no metadata from the broker."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    try:
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=3)
    except KafkaException:
        return
    raise AssertionError(f"the broker at {bootstrap} still answers during the fault")


def hold(broker: Broker, network: str, kind: str, hold_s: float) -> str:
    """Apply fault ``kind`` to the broker container for ``hold_s`` seconds, then heal it; returns
    what was done. A pause longer than the broker's session timeout (9 s) fences the broker at
    the unpause: every partition is leaderless until it is unfenced, then has a new leader epoch."""
    if kind not in KINDS:
        raise ValueError(f"unknown container fault {kind!r}: one of {', '.join(KINDS)}")
    assert broker.container is not None, "container faults need a broker container"
    engine, name = broker.container.engine, broker.container.name
    start = ("pause", name) if kind == "pause" else ("network", "disconnect", network, name)
    heal = ("unpause", name) if kind == "pause" else ("network", "connect", network, name)
    started = time.monotonic()
    engine(*start)
    try:
        assert_unreachable(broker.bootstrap)
        time.sleep(max(0.0, hold_s - (time.monotonic() - started)))
    finally:
        engine(*heal)
    what = "paused (cgroup freezer)" if kind == "pause" else "disconnected from its network"
    return f"broker container {what} for {hold_s:.0f}s, then healed"
