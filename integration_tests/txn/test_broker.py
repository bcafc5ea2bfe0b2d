"""The broker is a real Kafka: transactions are honoured the way read_committed readers need."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from integration_tests.kafka_tools import (committed_end_offsets, create_topic, produce, read_all,
                                           unique)
from integration_tests.providers import choose_provider, docker_broker, docker_unavailable_reason


def values(messages) -> list[bytes]:
    return [m.value() for m in messages]


def test_committed_visible_aborted_hidden(bootstrap):
    topic = create_topic(bootstrap, unique("proof"))
    produce(bootstrap, topic, [(None, b"c1"), (None, b"c2")], transactional=unique("tx"), commit=True)
    produce(bootstrap, topic, [(None, b"a1"), (None, b"a2")], transactional=unique("tx"), commit=False)
    produce(bootstrap, topic, [(None, b"plain")])
    assert values(read_all(bootstrap, topic, "read_committed")) == [b"c1", b"c2", b"plain"]
    assert values(read_all(bootstrap, topic, "read_uncommitted")) == [b"c1", b"c2", b"a1", b"a2", b"plain"]


def test_last_stable_offset_stops_at_open_transaction(bootstrap):
    topic = create_topic(bootstrap, unique("lso"))
    produce(bootstrap, topic, [(None, b"before")])
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("open")})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open-1")
    producer.flush(30)
    produce(bootstrap, topic, [(None, b"after")])
    # offsets: 0 before, 1 open-1 (open txn), 2 after -> LSO stays at 1 while the txn is open
    assert committed_end_offsets(bootstrap, topic) == {0: 1}
    assert values(read_all(bootstrap, topic, "read_committed", idle_s=1.0)) == [b"before"]
    producer.commit_transaction(30)
    assert committed_end_offsets(bootstrap, topic) == {0: 4}  # + commit marker
    assert values(read_all(bootstrap, topic, "read_committed")) == [b"before", b"open-1", b"after"]


def test_docker_provider_runs_a_real_container():
    reason = docker_unavailable_reason()
    if reason:
        pytest.skip(f"testcontainers provider not exercised here (docker/engine.sh provides one): {reason}")
    with docker_broker() as broker:
        assert broker.provider == "docker" and broker.container is not None
        topic = create_topic(broker.bootstrap, unique("docker"))
        produce(broker.bootstrap, topic, [(None, b"x")], transactional=unique("tx"))
        assert values(read_all(broker.bootstrap, topic)) == [b"x"]


def test_provider_choice_follows_environment(monkeypatch):
    monkeypatch.delenv("KAFKA_EOS_BROKER", raising=False)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    assert choose_provider() == "external"
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS")
    assert choose_provider() == "local"  # the session's broker is the JVM process unless forced
    monkeypatch.setenv("KAFKA_EOS_BROKER", "docker")
    assert choose_provider() == "docker"
