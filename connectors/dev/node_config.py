"""What each node of a local KRaft cluster is started with (``local_kafka.LocalKafkaCluster``
runs it): the cluster's ``ClusterSettings``, a node's ``server.properties`` and log4j2 file, its
storage format and its JVM command line.

Invariants:
- Every node runs combined (broker + controller) with its own storage directory, formatted
  once with the cluster's id (``format_storage``); a node's ``server.properties`` is created
  0600 before it is written (a secured node's file holds the keystore and admin passwords).
- Single-node mode sets replication 1 for the transaction and offsets logs; 3-node mode sets
  replication 3 with min ISR 2, so a coordinator can be killed for failover tests.
- ``ClusterSettings.extra`` are written last: they override any setting given here.
- 3.7+ and 4.x brokers alike log through slf4j 2 to log4j2 (pom.xml's pins win over 3.x's slf4j
  1.7): one ``LOG4J`` for every version.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from kafka_eos.connectors import jvm_class_archive
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError, kafka_version

if TYPE_CHECKING:  # security needs cryptography, imported only by a sasl_ssl cluster
    from kafka_eos.connectors.dev.security import ClusterSecurity

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
    jvm_options: tuple[str, ...] = ()  # more options of each node's JVM (jvm_class_archive: the archive's dump)
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



FAST_JVM_ENV, ARCHIVES_ENV = "KAFKA_EOS_FAST_JVM", jvm_class_archive.ARCHIVES_ENV
FAST_START = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"  # what shapes the broker's class archive


def fast_start(java: str, classpath: str) -> list[str]:
    """With ``KAFKA_EOS_FAST_JVM`` (the test suite's brokers): C1 only, and the class archive of
    this Kafka in ``KAFKA_EOS_JVM_ARCHIVES`` where one was built (``jvm_class_archive``)."""
    if not os.environ.get(FAST_JVM_ENV):
        return []
    archives = os.environ.get(ARCHIVES_ENV)
    shared = jvm_class_archive.mapped(jvm_class_archive.kafka_archive(Path(archives), java, classpath, FAST_START)
                                      ) if archives else []
    return ["-XX:TieredStopAtLevel=1", *shared]


def java_command(java: str, classpath: str, node: Node, settings: ClusterSettings) -> list[str]:
    """The JVM command line of ``node`` up to its main class."""
    return [java, f"-Xmx{settings.heap}", "-Xms64m", "-XX:+UseSerialGC", *fast_start(java, classpath),
            f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
            "-Djava.awt.headless=true", *(f"-D{k}={v}" for k, v in settings.jvm_properties), *settings.jvm_options,
            "-cp", classpath]


def format_storage(java: str, classpath: str, node: Node, nodes: Sequence[Node], settings: ClusterSettings,
                   security: ClusterSecurity | None, cluster_id: str) -> None:
    """Write ``node``'s log4j2 and server.properties files and format its storage with ``cluster_id``
    (the SCRAM users of a secured cluster, the transaction.version feature if set)."""
    node.directory.mkdir(parents=True, exist_ok=True)
    (node.directory / "log4j2.properties").write_text(LOG4J)
    properties = node.directory / "server.properties"
    properties.touch(mode=0o600)  # a secured node's file holds the keystore and admin passwords
    properties.write_text(server_properties(node, nodes, settings, security))
    cmd = java_command(java, classpath, node, settings) + [
        "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(properties)]
    if security:
        cmd += security.scram_arguments()
    if settings.transaction_version is not None:
        cmd += ["--feature", f"transaction.version={settings.transaction_version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BrokerEnvironmentError(
            f"formatting Kafka {settings.version()} storage failed:\n{proc.stdout}\n{proc.stderr}")


def server_properties(node: Node, nodes: Sequence[Node], settings: ClusterSettings,
                      security: ClusterSecurity | None) -> str:
    """``node``'s server.properties text in a cluster of ``nodes``."""
    n = len(nodes)
    voters = ",".join(f"{x.node_id}@127.0.0.1:{x.controller_port}" for x in nodes)
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
        "transaction.max.timeout.ms": settings.transaction_max_timeout_ms,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
        "group.initial.rebalance.delay.ms": 0,
        "num.partitions": 1,
        "auto.create.topics.enable": "true",
        "log.retention.check.interval.ms": 1000,
        "log.segment.delete.delay.ms": 0,
    }
    if security:
        props.update(security.broker_properties(node.port, node.controller_port))
    props.update(dict(settings.extra))
    return "".join(f"{k}={v}\n" for k, v in props.items())
