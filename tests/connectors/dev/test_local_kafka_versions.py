"""The local broker's version parameters (no JVM runs here): which jars, which storage format."""
from __future__ import annotations

import subprocess

import pytest

from kafka_eos.connectors.dev import java_env, local_kafka
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster, Node


def test_a_named_version_is_fetched_into_its_own_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_EOS_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(java_env.shutil, "which", lambda name: "/usr/bin/mvn")
    monkeypatch.setattr(java_env.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or
                        subprocess.CompletedProcess(cmd, 0, "", ""))
    assert java_env.broker_classpath("3.9.1") == str(tmp_path / "jars" / "kafka-3.9.1" / "*")
    assert "-Dkafka.version=3.9.1" in calls[0]
    assert (tmp_path / "jars" / "kafka-3.9.1" / ".complete").read_text() == "3.9.1"
    assert java_env.broker_classpath() == str(tmp_path / "jars" / f"kafka-{java_env.kafka_version()}" / "*")
    assert f"-Dkafka.version={java_env.kafka_version()}" in calls[1]


def test_transaction_version_is_refused_on_a_3x_broker():
    with pytest.raises(BrokerEnvironmentError, match="transaction_version=2 needs a Kafka 4.0\\+ broker; "
                                                     "Kafka 3.9.1 has no transaction.version feature"):
        ClusterSettings(kafka_version="3.9.1", transaction_version=2)
    assert ClusterSettings(kafka_version="3.7.2").version() == "3.7.2"
    assert ClusterSettings().version() == java_env.kafka_version()


@pytest.mark.parametrize("tv, expected", [(None, []), (0, ["--feature", "transaction.version=0"]),
                                          (2, ["--feature", "transaction.version=2"])])
def test_the_storage_format_carries_the_transaction_version(tv, expected, tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(local_kafka.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or
                        subprocess.CompletedProcess(cmd, 0, "", ""))
    cluster = LocalKafkaCluster(ClusterSettings(workdir=tmp_path, transaction_version=tv))
    node = Node(1, 9092, 9093, tmp_path / "node-1")
    cluster.nodes = [node]
    cluster._format("java", "cp", node)
    cmd = ran[0]
    assert cmd[-2:] == expected if expected else "--feature" not in cmd
