"""`kafka-eos dev kafka up|down` and the clear errors for a broken environment."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_eos.connectors.dev.background import state_file
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError, broker_classpath, java_binary
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster, check_port_free
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from integration_tests.kafka_tools import create_topic, produce, read_all, unique

CLI = [sys.executable, "-m", "kafka_eos.connectors.cli"]


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def broker_pids_alive(pids: list[int]) -> list[int]:
    """The ones of ``pids`` that are still a running Kafka broker."""
    out = subprocess.run(["pgrep", "-f", "kafka.Kafka"], capture_output=True, text=True).stdout
    return sorted(set(pids) & {int(p) for p in out.split()})


def test_dev_kafka_up_then_down_leaves_nothing(tmp_path):
    env = {"KAFKA_EOS_CACHE": os.environ.get("KAFKA_EOS_CACHE", str(Path.home() / ".cache" / "kafka-eos"))}
    up = run_cli("dev", "kafka", "up", "--broker-setting", "auto.create.topics.enable=false", env=env)
    assert up.returncode == 0, up.stderr
    started = json.loads(state_file().read_text())["pids"]  # only this broker: other tests may run brokers
    assert broker_pids_alive(started) == sorted(started)
    line = up.stdout.strip().splitlines()[-1]
    assert line.startswith("bootstrap=127.0.0.1:")
    bootstrap = line.split("=", 1)[1]
    try:
        topic = create_topic(bootstrap, unique("dev"))
        produce(bootstrap, topic, [(None, b"kept")], transactional=unique("tx"), commit=True)
        produce(bootstrap, topic, [(None, b"dropped")], transactional=unique("tx"), commit=False)
        assert [m.value() for m in read_all(bootstrap, topic)] == [b"kept"]
        # --broker-setting reached the broker: a producer's metadata request does not create a topic
        missing = unique("missing")
        answer = Producer({"bootstrap.servers": bootstrap}).list_topics(missing, timeout=10).topics[missing]
        assert answer.error is not None and answer.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        assert missing not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    finally:
        down = run_cli("dev", "kafka", "down", env=env)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert broker_pids_alive(started) == [] and not state_file().exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(bootstrap.rsplit(":", 1)[1])), timeout=1)


def test_tests_keep_dev_state_apart_from_the_users():
    """The user's `kafka-eos dev kafka up` state lives in the cache; the suite's never does."""
    from kafka_eos.connectors.dev.java_env import cache_root
    from kafka_eos.connectors.dev.registry_background import state_file as registry_state_file
    for path in (state_file(), registry_state_file()):
        assert cache_root() not in path.parents, path
        assert path.parent == Path(os.environ["KAFKA_EOS_STATE_DIR"])


def test_no_java_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    with pytest.raises(BrokerEnvironmentError, match="Java not found.*Java 17"):
        java_binary()


def test_old_java_is_refused(monkeypatch, tmp_path):
    bin_dir = tmp_path / "jdk" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "java"
    fake.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    with pytest.raises(BrokerEnvironmentError, match="Java 11.*need Java 17"):
        java_binary()


def test_port_in_use_is_named():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(BrokerEnvironmentError, match=f"port {port} .* in use"):
            check_port_free(port)


def test_maven_unreachable_names_the_artifact(monkeypatch, tmp_path):
    monkeypatch.setenv("KAFKA_EOS_CACHE", str(tmp_path / "cache"))
    # Offline Maven asked for a Kafka version it has never downloaded: the same failure a machine
    # without access to Maven Central gets, named by artifact.
    monkeypatch.setenv("KAFKA_EOS_MAVEN_ARGS", "-o -Dkafka.version=0.0.404")
    with pytest.raises(BrokerEnvironmentError, match=r"failed artifact: (org\.apache\.kafka:kafka_2\.13:jar:0\.0\.404|"
                       r"org\.apache\.maven\.plugins:maven-dependency-plugin:3\.8\.1)"):
        broker_classpath()
    assert not list((tmp_path / "cache").glob("jars/*/.complete"))


@pytest.mark.chaos  # a long fault run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_three_node_cluster_survives_a_node_loss():
    with LocalKafkaCluster(ClusterSettings(nodes=3)) as cluster:
        topic = create_topic(cluster.bootstrap, unique("ha"), partitions=3)
        produce(cluster.bootstrap, topic, [(None, b"one")], transactional=unique("tx"))
        cluster.stop_node(2, kill=True)
        produce(cluster.bootstrap, topic, [(None, b"two")], transactional=unique("tx"))
        assert sorted(m.value() for m in read_all(cluster.bootstrap, topic)) == [b"one", b"two"]


def test_a_temporary_cluster_removes_its_topic_data_on_exit():
    # a cluster on a temporary workdir left every run's topics in /tmp (a bench run: about 20 GB)
    with LocalKafkaCluster() as cluster:
        topic = create_topic(cluster.bootstrap, unique("leftover"), partitions=1)
        produce(cluster.bootstrap, topic, [(None, b"x" * 1000)], transactional=unique("tx"))
        workdir = cluster.workdir
        assert list(workdir.rglob(f"{topic}-0/*.log"))
    assert not workdir.exists()
