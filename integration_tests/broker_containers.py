"""Kafka in a container, for the testcontainers provider and the container-fault tests.

What this module enforces:
- The engine is the one ``docker/engine.sh`` provides: ``DOCKER_HOST`` when set, else Docker's
  default socket, else podman's Docker API socket. It is exported as ``DOCKER_HOST`` (with
  ``TESTCONTAINERS_RYUK_DISABLED=true``: the reaper image cannot be pulled everywhere, so every
  container here is removed by the context manager that started it).
- The broker image is ``KAFKA_EOS_KAFKA_IMAGE`` when set (e.g. ``apache/kafka:4.2.1``, which reads
  the same ``KAFKA_*`` variables), else the image ``docker/images/build.py broker`` builds here.
- A broker container publishes its client listener on a free loopback port of the host and
  advertises exactly that address, so clients outside the container reach it; it is ready when an
  admin client lists its topics.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from kafka_eos.connectors.dev.local_kafka import free_port

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "docker" / "images" / "build.py"
PODMAN_SOCKET = "/run/podman/podman.sock"
DOCKER_SOCKET = "/var/run/docker.sock"
CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"


class ContainerUnavailable(RuntimeError):
    """No container engine answers, or the broker image cannot be had; says which and why."""


def engine_url() -> str | None:
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    for socket in (DOCKER_SOCKET, PODMAN_SOCKET):
        if Path(socket).is_socket():
            return f"unix://{socket}"
    return None


def engine_unavailable_reason() -> str | None:
    """None when a Docker-API engine answers, else why not (run docker/engine.sh to get one)."""
    url = engine_url()
    if url is None:
        return f"no Docker engine reachable (no DOCKER_HOST, no {DOCKER_SOCKET}, no {PODMAN_SOCKET}: run docker/engine.sh)"
    try:
        import docker
        docker.DockerClient(base_url=url, timeout=5).ping()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means no usable engine
        return f"no Docker engine reachable at {url} ({type(exc).__name__}: {str(exc)[:160]})"


def use_engine() -> None:
    """Point docker-py and testcontainers at the engine (before they read their settings)."""
    url = engine_url()
    if url:
        os.environ.setdefault("DOCKER_HOST", url)
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def engine_cli() -> list[str]:
    """The CLI for what the Docker API of podman 4.3 lacks or does differently (pause, networks)."""
    from shutil import which
    if which("podman") and engine_url() == f"unix://{PODMAN_SOCKET}":
        return ["podman"]
    return ["docker", "-H", engine_url() or f"unix://{DOCKER_SOCKET}"]


def broker_image() -> str:
    """The broker image to run, built here (cached by its inputs) unless KAFKA_EOS_KAFKA_IMAGE names one."""
    if os.environ.get("KAFKA_EOS_KAFKA_IMAGE"):
        return os.environ["KAFKA_EOS_KAFKA_IMAGE"]
    proc = subprocess.run([sys.executable, str(BUILD), "broker"], capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        raise ContainerUnavailable(f"the broker image could not be built: {proc.stderr.strip()[-1500:]}")
    return proc.stdout.strip().splitlines()[-1]


def broker_environment(port: int, heap: str = "384m") -> dict[str, str]:
    """One combined KRaft node; the client listener advertises the host's published port."""
    return {
        "CLUSTER_ID": CLUSTER_ID,
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        # clients: EXTERNAL, the host's published port; the broker's own requests (e.g. adding
        # partitions to a transaction): INTERNAL, inside the container
        "KAFKA_LISTENERS": "INTERNAL://:19092,EXTERNAL://:9092,CONTROLLER://:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"INTERNAL://localhost:19092,EXTERNAL://127.0.0.1:{port}",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "4",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "4",
        "KAFKA_TRANSACTION_MAX_TIMEOUT_MS": "900000",
        "KAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": "1000",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "true",
        "KAFKA_HEAP_OPTS": f"-Xmx{heap} -Xms64m",
    }


@dataclass
class BrokerContainer:
    """A running broker container: its bootstrap address and the engine's name for it."""
    bootstrap: str
    name: str
    image: str
    logs: list[str] = field(default_factory=list)

    def engine(self, *args: str, timeout_s: float = 60) -> str:
        proc = subprocess.run([*engine_cli(), *args], capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode != 0:
            raise ContainerUnavailable(f"{' '.join(engine_cli())} {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def log_tail(self, lines: int = 40) -> str:
        try:
            return f"--- container {self.name} (last {lines} lines) ---\n" + self.engine("logs", "--tail", str(lines), self.name)
        except Exception as exc:  # noqa: BLE001 - a log tail must never hide the failure it explains
            return f"(no log of container {self.name}: {exc})"


def wait_until_ready(bootstrap: str, timeout_s: float = 180) -> None:
    """The port accepts connections (a raw socket: no client error logs meanwhile), then the broker answers."""
    import socket
    from confluent_kafka.admin import AdminClient
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
            break
        except OSError as exc:
            last = exc
            time.sleep(0.5)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=5)
            return
        except Exception as exc:  # noqa: BLE001 - not up yet
            last = exc
            time.sleep(1)
    raise TimeoutError(f"broker container at {bootstrap} did not answer in {timeout_s:.0f}s ({last})")


@contextmanager
def broker_container(image: str | None = None, network: str | None = None) -> Iterator[BrokerContainer]:
    """Start a broker container (on ``network`` if given), yield it, and remove it."""
    use_engine()
    from testcontainers.core.container import DockerContainer
    port = free_port()
    container = DockerContainer(image or broker_image())
    container.ports["9092/tcp"] = ("127.0.0.1", port)  # loopback only: never published beyond the host
    for key, value in broker_environment(port).items():
        container.with_env(key, value)
    if network:
        container.with_kwargs(network=network)
    with container:
        wrapped = container.get_wrapped_container()
        broker = BrokerContainer(f"127.0.0.1:{port}", wrapped.name, container.image)
        try:
            wait_until_ready(broker.bootstrap)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\n{broker.log_tail()}") from exc
        yield broker
