"""Where the integration suite gets its Kafka broker (and schema registry): one fixture each, three providers.

1. ``KAFKA_BOOTSTRAP_SERVERS`` set -> that external cluster, used as is.
2. ``KAFKA_EOS_BROKER=docker``       -> a broker container (``integration_tests.broker_containers``: the image
   built here by ``docker/images/build.py``, or ``KAFKA_EOS_KAFKA_IMAGE``) on the engine
   ``docker/engine.sh`` provides (Docker, or podman's Docker API).
3. otherwise                         -> the local Maven-jar KRaft broker (kafka_eos.connectors.dev.local_kafka).

``KAFKA_EOS_BROKER=external|docker|local`` forces one. The session's broker stays the JVM process
unless forced, even where an engine answers: it is the one the fault tests restart and reconfigure,
and the one their timings were measured on. The container tests (``test_containers*.py``) start
their own broker containers whenever an engine answers. Every provider yields a ``Broker``;
``local`` is the only one that can be restarted or reconfigured by a test.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from integration_tests.broker_containers import BrokerContainer, broker_container, engine_unavailable_reason
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster
from kafka_eos.connectors.dev.registry import LocalRegistry


@dataclass
class Broker:
    bootstrap: str
    provider: str
    cluster: LocalKafkaCluster | None = None
    container: BrokerContainer | None = None

    def log_tail(self) -> str:
        if self.cluster:
            return self.cluster.log_tail()
        if self.container:
            return self.container.log_tail()
        return f"(no broker log: {self.provider} provider)"


def docker_unavailable_reason() -> str | None:
    """None when a Docker-API engine answers (Docker, or podman's service), else why not."""
    return engine_unavailable_reason()


def choose_provider() -> str:
    forced = os.environ.get("KAFKA_EOS_BROKER")
    if forced:
        return forced
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        return "external"
    return "local"


@contextmanager
def docker_broker() -> Iterator[Broker]:
    with broker_container() as container:
        yield Broker(container.bootstrap, "docker", container=container)


@contextmanager
def docker_broker_on(network: str) -> Iterator[Broker]:
    """A broker container attached to ``network`` (for network disconnect/connect faults)."""
    with broker_container(network=network) as container:
        yield Broker(container.bootstrap, "docker", container=container)


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
# 2. a Docker engine answers and has the Apicurio image (no pull is tried)
#                                 -> testcontainers' Apicurio Registry container.
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
    return "docker" if docker_unavailable_reason() is None and image_present(APICURIO_IMAGE) else "local"


def image_present(image: str) -> bool:
    """The engine holds ``image`` already (no registry needs to answer)."""
    try:
        import docker
        from integration_tests.broker_containers import engine_url
        docker.DockerClient(base_url=engine_url(), timeout=5).images.get(image)
        return True
    except Exception:  # noqa: BLE001 - absent, or no engine
        return False


def _session_user() -> tuple[str, str]:
    import secrets
    return "kafkaeos", f"pw{secrets.token_hex(12)}"  # Quarkus env-var names: no dots or dashes


@contextmanager
def docker_registry(user: tuple[str, str]) -> Iterator[SchemaRegistry]:
    from integration_tests.broker_containers import use_engine
    use_engine()
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
