"""Where the integration suite gets its Kafka broker (and schema registry): one fixture each, three providers.

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
from kafka_eos.connectors.dev.registry import LocalRegistry

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


# ---- the schema registry: the same three providers ----
#
# 1. ``SCHEMA_REGISTRY_URL`` set -> that registry (``SCHEMA_REGISTRY_AUTH`` = its user:password, if any).
# 2. a Docker engine answers      -> testcontainers' Apicurio Registry container.
# 3. otherwise                     -> the local Apicurio tarball (kafka_eos.connectors.dev.registry).
# ``KAFKA_EOS_REGISTRY=external|docker|local`` forces one. The docker and local registries require
# HTTP basic auth of a user made up for the session, so every test goes through real credentials.

APICURIO_IMAGE = os.environ.get("KAFKA_EOS_APICURIO_IMAGE", "apicurio/apicurio-registry:3.0.9")


@dataclass
class SchemaRegistry:
    url: str                      # the Confluent-compatible API
    provider: str
    user_info: str | None = None  # user:password, None when the registry needs none
    local: LocalRegistry | None = None

    def log_tail(self) -> str:
        return self.local.log_tail() if self.local else f"(no registry log: {self.provider} provider)"


def choose_registry_provider() -> str:
    forced = os.environ.get("KAFKA_EOS_REGISTRY")
    if forced:
        return forced
    if os.environ.get("SCHEMA_REGISTRY_URL"):
        return "external"
    return "docker" if docker_unavailable_reason() is None else "local"


def _session_user() -> tuple[str, str]:
    import secrets
    return "kafkaeos", f"pw{secrets.token_hex(12)}"  # Quarkus env-var names: no dots or dashes


@contextmanager
def docker_registry(user: tuple[str, str]) -> Iterator[SchemaRegistry]:
    from testcontainers.core.container import DockerContainer
    from kafka_eos.connectors.dev.registry import CCOMPAT
    container = DockerContainer(APICURIO_IMAGE).with_exposed_ports(8080)
    # the same settings as the local registry, as environment variables (Quarkus maps them)
    for key, value in LocalRegistry.auth_properties(user).items():
        container.with_env(key.upper().replace(".", "_").replace("-", "_"), value)
    with container:
        url = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(8080)}{CCOMPAT}"
        _wait_http(url + "/subjects")
        yield SchemaRegistry(url, "docker", ":".join(user))


def _wait_http(url: str, timeout_s: float = 120.0) -> None:
    import time
    from kafka_eos.connectors.dev.registry import answers
    deadline = time.monotonic() + timeout_s
    while not answers(url):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not answer in {timeout_s:.0f}s")
        time.sleep(0.5)


@contextmanager
def local_registry(user: tuple[str, str]) -> Iterator[SchemaRegistry]:
    from kafka_eos.connectors.dev.registry import RegistrySettings
    with LocalRegistry(RegistrySettings(users=(user,))) as registry:
        yield SchemaRegistry(registry.url, "local", ":".join(user), registry)


@contextmanager
def registry_from_environment() -> Iterator[SchemaRegistry]:
    provider = choose_registry_provider()
    if provider == "external":
        yield SchemaRegistry(os.environ["SCHEMA_REGISTRY_URL"], "external",
                             os.environ.get("SCHEMA_REGISTRY_AUTH") or None)
    elif provider == "docker":
        with docker_registry(_session_user()) as registry:
            yield registry
    else:
        with local_registry(_session_user()) as registry:
            yield registry
