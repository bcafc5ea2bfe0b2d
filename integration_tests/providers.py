"""Where the integration suite gets its Kafka broker: one fixture, three providers.

1. ``KAFKA_BOOTSTRAP_SERVERS`` set -> that external cluster, used as is.
2. a Docker engine answers          -> testcontainers' Kafka container (apache/kafka 4.x, KRaft).
3. otherwise                         -> the local Maven-jar KRaft broker (kafka_eos.connectors.dev.local_kafka).

``KAFKA_EOS_BROKER=external|docker|local`` forces one. Every provider yields a ``Broker``;
``local`` is the only one that can be restarted or reconfigured by a test.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster

KAFKA_IMAGE = os.environ.get("KAFKA_EOS_KAFKA_IMAGE", "apache/kafka:4.2.1")


@dataclass
class Broker:
    bootstrap: str
    provider: str
    cluster: LocalKafkaCluster | None = None

    def log_tail(self) -> str:
        return self.cluster.log_tail() if self.cluster else f"(no broker log: {self.provider} provider)"


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers, else why not."""
    try:
        import docker
        docker.from_env(timeout=3).ping()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means no usable engine
        return f"no Docker engine reachable ({type(exc).__name__}: {str(exc)[:160]})"


def choose_provider() -> str:
    forced = os.environ.get("KAFKA_EOS_BROKER")
    if forced:
        return forced
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        return "external"
    return "docker" if docker_unavailable_reason() is None else "local"


@contextmanager
def docker_broker() -> Iterator[Broker]:
    from testcontainers.kafka import KafkaContainer
    container = KafkaContainer(KAFKA_IMAGE).with_kraft()
    container.with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
    container.with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    with container:
        yield Broker(container.get_bootstrap_server(), "docker")


@contextmanager
def local_broker(settings: ClusterSettings = ClusterSettings()) -> Iterator[Broker]:
    with LocalKafkaCluster(settings) as cluster:
        yield Broker(cluster.bootstrap, "local", cluster)


@contextmanager
def broker_from_environment() -> Iterator[Broker]:
    provider = choose_provider()
    if provider == "external":
        yield Broker(os.environ["KAFKA_BOOTSTRAP_SERVERS"], "external")
    elif provider == "docker":
        with docker_broker() as broker:
            yield broker
    else:
        with local_broker() as broker:
            yield broker
