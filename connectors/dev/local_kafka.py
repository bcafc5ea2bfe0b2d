"""A real Apache Kafka KRaft cluster as plain Java processes on loopback (no Docker).

Invariants:
- Every node runs combined (broker + controller) with its own storage directory, formatted
  once with one cluster id; ports are free loopback ports picked at start.
- Single-node mode sets replication 1 for the transaction and offsets logs; 3-node mode sets
  replication 3 with min ISR 2, so a coordinator can be killed for failover tests.
- ``transaction.max.timeout.ms`` is a setting of the cluster (tests use a short one for the
  broker-aborts-on-timeout case).
- Each node's output goes to ``<workdir>/node-N/broker.log``; ``log_tail()`` shows it.
- ``kafka_version`` picks the broker jars (default: the pinned one, ``java_env.kafka_version()``);
  3.7+ and 4.x alike log through slf4j 2 to log4j2 (pom.xml's pins win over 3.x's slf4j 1.7), one
  log4j2.properties for every version.
- ``transaction_version`` (4.0+ only) is formatted into the storage (``--feature
  transaction.version=N``: 0 = transactions v1 only, 2 = KIP-890 v2); None keeps the version's default.
- ``security="sasl_ssl"``: clients and brokers use a SASL_SSL (SCRAM-SHA-512) listener with ACLs
  enforced (``kafka_eos.connectors.dev.security``); its users exist from storage format on.
  ``client_auth="required"`` (sasl_ssl only) makes that listener require client certificates.
"""
from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError, broker_classpath, java_binary, kafka_version
from kafka_eos.connectors.dev.processes import stop_process

ADMIN, ETL = "admin", "etl"  # the users of a sasl_ssl cluster (kafka_eos.connectors.dev.security)

SECURITY_MODES = ("plaintext", "sasl_ssl")

LOG4J = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.state.name = state.change.logger
logger.state.level = WARN
"""


@dataclass(frozen=True)
class ClusterSettings:
    """What kind of local cluster to start."""
    nodes: int = 1
    transaction_max_timeout_ms: int = 900_000
    heap: str = "512m"
    workdir: Path | None = None
    extra: tuple[tuple[str, str], ...] = ()
    security: str = "plaintext"
    kafka_version: str | None = None       # None: the pinned version (java_env.kafka_version())
    transaction_version: int | None = None  # the transaction.version feature (4.0+); None: the default
    passwords: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # sasl_ssl users; else env or generated
    jvm_properties: tuple[tuple[str, str], ...] = ()  # -Dkey=value of each node's JVM (e.g. security.oauth_jvm)
    client_auth: str = "none"  # sasl_ssl: "required" = ssl.client.auth=required (client certificates)

    def __post_init__(self) -> None:
        if self.security not in SECURITY_MODES:
            raise BrokerEnvironmentError(f"security={self.security!r}: use one of {', '.join(SECURITY_MODES)}")
        if self.client_auth != "none" and self.security != "sasl_ssl":
            raise BrokerEnvironmentError(f"client_auth={self.client_auth!r} needs security='sasl_ssl' (a "
                                         f"{self.security} listener has no TLS): set both")
        if self.transaction_version is not None and self.major() < 4:
            raise BrokerEnvironmentError(
                f"transaction_version={self.transaction_version} needs a Kafka 4.0+ broker; Kafka "
                f"{self.version()} has no transaction.version feature (its transactions are v1): drop the setting")

    def version(self) -> str:
        return self.kafka_version or kafka_version()

    def major(self) -> int:
        return int(self.version().split(".")[0])


def new_cluster_id() -> str:
    """A KRaft cluster id (base64 UUID) that does not start with '-', which the storage tool's
    argument parser would take for an option."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def free_port() -> int:
    with socket.socket() as s:
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
class Node:
    node_id: int
    port: int
    controller_port: int
    directory: Path
    process: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.directory / "broker.log"


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
        for node in self.nodes:
            self.start_node(node.node_id, java, classpath)
        self.wait_ready(timeout_s)
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

    def _java(self, java: str, classpath: str, node: Node) -> list[str]:
        fast_start = ["-XX:TieredStopAtLevel=1"] if os.environ.get("KAFKA_EOS_FAST_JVM") else []
        return [java, f"-Xmx{self.settings.heap}", "-Xms64m", "-XX:+UseSerialGC", *fast_start,
                f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
                "-Djava.awt.headless=true", *(f"-D{k}={v}" for k, v in self.settings.jvm_properties),
                "-cp", classpath]

    def _format(self, java: str, classpath: str, node: Node) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        (node.directory / "log4j2.properties").write_text(LOG4J)
        properties = node.directory / "server.properties"
        properties.touch(mode=0o600)  # a secured node's file holds the keystore and admin passwords
        properties.write_text(self._properties(node))
        cmd = self._java(java, classpath, node) + [
            "kafka.tools.StorageTool", "format", "-t", self.cluster_id,
            "-c", str(node.directory / "server.properties")]
        if self.security:
            cmd += self.security.scram_arguments()
        if self.settings.transaction_version is not None:
            cmd += ["--feature", f"transaction.version={self.settings.transaction_version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BrokerEnvironmentError(
                f"formatting Kafka {self.settings.version()} storage failed:\n{proc.stdout}\n{proc.stderr}")

    def _properties(self, node: Node) -> str:
        n = len(self.nodes)
        voters = ",".join(f"{x.node_id}@127.0.0.1:{x.controller_port}" for x in self.nodes)
        replication, min_isr = (1, 1) if n < 3 else (3, 2)
        props = {
            "process.roles": "broker,controller",
            "node.id": node.node_id,
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": node.directory / "data",
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": 4,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": min_isr,
            "transaction.state.log.num.partitions": 4,
            "default.replication.factor": replication,
            "min.insync.replicas": min_isr if n >= 3 else 1,
            "transaction.max.timeout.ms": self.settings.transaction_max_timeout_ms,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
            "group.initial.rebalance.delay.ms": 0,
            "num.partitions": 1,
            "auto.create.topics.enable": "true",
            "log.retention.check.interval.ms": 1000,
            "log.segment.delete.delay.ms": 0,
        }
        if self.security:
            props.update(self.security.broker_properties(node.port, node.controller_port))
        props.update(dict(self.settings.extra))
        return "".join(f"{k}={v}\n" for k, v in props.items())
