"""A real Apache Kafka KRaft cluster as plain Java processes on loopback (no Docker).

Invariants:
- Every node runs combined (broker + controller) with its own storage directory, formatted
  once with one cluster id; ports are free loopback ports picked at start. What a node is
  started with (settings, server.properties, storage format, JVM command) is
  ``kafka_eos.connectors.dev.node_config``'s; this module starts, stops and waits for nodes.
- ``transaction.max.timeout.ms`` is a setting of the cluster (tests use a short one for the
  broker-aborts-on-timeout case).
- Each node's output goes to ``<workdir>/node-N/broker.log``; ``log_tail()`` shows it. Leaving the
  context manager removes the workdir (logs and topic data) when it was a temporary one (not
  given in the settings): a bench run leaves about 20 GB of topic data behind otherwise.
- ``kafka_version`` picks the broker jars (default: the pinned one, ``java_env.kafka_version()``);
  one log4j2.properties for every version (``node_config.LOG4J``).
- ``transaction_version`` (4.0+ only) is formatted into the storage (``--feature
  transaction.version=N``: 0 = transactions v1 only, 2 = KIP-890 v2); None keeps the version's default.
- ``security="sasl_ssl"``: clients and brokers use a SASL_SSL (SCRAM-SHA-512) listener with ACLs
  enforced (``kafka_eos.connectors.dev.security``); its users exist from storage format on.
  ``client_auth="required"`` (sasl_ssl only) makes that listener require client certificates.
"""
from __future__ import annotations

import base64
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError, broker_classpath, java_binary
from kafka_eos.connectors.dev.node_config import LOG4J as LOG4J  # re-exported: docker/images/build.py
from kafka_eos.connectors.dev.node_config import SECURITY_MODES as SECURITY_MODES  # re-exported
from kafka_eos.connectors.dev.node_config import ClusterSettings as ClusterSettings  # re-exported
from kafka_eos.connectors.dev.node_config import Node as Node  # re-exported
from kafka_eos.connectors.dev.node_config import format_storage, java_command, server_properties
from kafka_eos.connectors.dev.processes import stop_process

ADMIN, ETL = "admin", "etl"  # the users of a sasl_ssl cluster (kafka_eos.connectors.dev.security)


def new_cluster_id() -> str:
    """A KRaft cluster id (base64 UUID) that does not start with '-', which the storage tool's
    argument parser would take for an option."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


PORT_FLOOR = 20000   # below: well-known services' ports


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range of local ports for outgoing connections (Linux's default if unreadable)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port(tries: int = 200) -> int:
    """A free port on 127.0.0.1 outside the kernel's ephemeral range. A node killed and restarted
    binds its port again; were it an ephemeral one, any process's outgoing connection could have
    taken it as its local port meanwhile (CI: a restarted broker failed with "Address already in
    use"). Ports outside the range are never handed out that way."""
    low, high = ephemeral_range()
    candidates = [*range(PORT_FLOOR, low), *range(high + 1, 65536)]
    for port in random.sample(candidates, min(tries, len(candidates))):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:   # every candidate taken: any free port
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port_free(port: int) -> None:
    """Raise if something listens on the port. SO_REUSEADDR as the broker's JVM sets it, so
    connections of a just-killed broker in TIME_WAIT do not count."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise BrokerEnvironmentError(
                f"port {port} on 127.0.0.1 is in use ({exc.strerror}); stop what holds it "
                "or let kafka-eos pick free ports (do not pass a port).") from exc


@dataclass
class LocalKafkaCluster:
    """Start, stop and restart a local KRaft cluster. Use as a context manager."""
    settings: ClusterSettings = field(default_factory=ClusterSettings)
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workdir = Path(self.settings.workdir or tempfile.mkdtemp(prefix="kafka-eos-broker-"))
        self.cluster_id = new_cluster_id()
        self.security = None
        if self.settings.security == "sasl_ssl":
            from kafka_eos.connectors.dev.security import ClusterSecurity  # needs cryptography
            self.workdir.chmod(0o700)
            self.security = ClusterSecurity.create(self.workdir / "security", self.settings.passwords,
                                                   self.settings.client_auth)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def client_conf(self, user: str = ETL) -> dict[str, str]:
        """librdkafka settings to connect as ``user`` (just the bootstrap on a plaintext cluster)."""
        conf = {"bootstrap.servers": self.bootstrap}
        return {**conf, **self.security.client_conf(user)} if self.security else conf

    def admin_conf(self) -> dict[str, str]:
        return self.client_conf(ADMIN)

    def start(self, timeout_s: float = 90.0) -> "LocalKafkaCluster":
        java, classpath = java_binary(), broker_classpath(self.settings.kafka_version)
        if not self.nodes:
            self.nodes = [Node(i + 1, free_port(), free_port(), self.workdir / f"node-{i + 1}")
                          for i in range(self.settings.nodes)]
            for node in self.nodes:
                self._format(java, classpath, node)
            if self.security:
                self.security.write_client_files(self.bootstrap)
        try:
            for node in self.nodes:
                self.start_node(node.node_id, java, classpath)
            self.wait_ready(timeout_s)
        except BaseException:   # `with` calls no __exit__ when __enter__ raises: no node may outlive it
            self.stop()
            raise
        return self

    def start_node(self, node_id: int, java: str | None = None, classpath: str | None = None) -> None:
        node = self.node(node_id)
        for port in (node.port, node.controller_port):
            check_port_free(port)
        cmd = self._java(java or java_binary(), classpath or broker_classpath(self.settings.kafka_version), node)
        cmd += ["kafka.Kafka", str(node.directory / "server.properties")]
        with open(node.log, "ab") as log:
            node.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def stop_node(self, node_id: int, kill: bool = False) -> None:
        node = self.node(node_id)
        stop_process(node.process, signal.SIGKILL if kill else signal.SIGTERM)
        node.process = None

    def stop(self) -> None:
        for node in reversed(self.nodes):
            self.stop_node(node.node_id)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Wait until every running node answers metadata with all live brokers registered."""
        from kafka_eos.client_factory import Noise, admin as new_admin
        running = [n for n in self.nodes if n.process is not None]
        deadline = time.monotonic() + timeout_s
        admin = new_admin(self.admin_conf(), Noise.SILENT)
        while time.monotonic() < deadline:
            for node in running:
                process = cast(subprocess.Popen, node.process)  # running holds only nodes with a process
                if process.poll() is not None:
                    raise BrokerEnvironmentError(
                        f"Kafka node {node.node_id} exited with {process.returncode}:\n{self.log_tail(node.node_id)}")
            try:
                if len(admin.list_topics(timeout=2).brokers) >= len(running):
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.3)
        raise BrokerEnvironmentError(f"Kafka did not become ready in {timeout_s:.0f}s:\n{self.log_tail()}")

    def log_tail(self, node_id: int | None = None, lines: int = 40) -> str:
        chosen = [self.node(node_id)] if node_id else self.nodes
        parts = []
        for node in chosen:
            text = node.log.read_text(errors="replace").splitlines() if node.log.exists() else []
            parts.append(f"--- {node.log} (last {lines} lines) ---\n" + "\n".join(text[-lines:]))
        return "\n".join(parts)

    def __enter__(self) -> "LocalKafkaCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self.settings.workdir is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _java(self, java: str, classpath: str, node: Node) -> list[str]:
        return java_command(java, classpath, node, self.settings)

    def _format(self, java: str, classpath: str, node: Node) -> None:
        format_storage(java, classpath, node, self.nodes, self.settings, self.security, self.cluster_id)

    def _properties(self, node: Node) -> str:
        return server_properties(node, self.nodes, self.settings, self.security)
