"""What each listed broker did, read by a librdkafka probe (real sockets stand in for brokers at
the TCP level: a listener never read is a hung broker, a closed port a refused one), and the
source lookups' early stop when a query starts with no broker answering (issue 44)."""
from __future__ import annotations

import time
from contextlib import ExitStack

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos import broker_outcomes
from kafka_eos.broker_reach import probe
from kafka_eos.kafka_clients import BrokersUnreachable
from kafka_eos.offsets import lookup_retry
from kafka_eos.offsets.lookup_retry import LookupRetry
from tests.factories import hung_listener, refused_port




def test_the_probe_asks_every_listed_broker_at_once_and_says_what_each_did():
    with ExitStack() as stack:
        hung, refused = hung_listener(stack), refused_port()
        began = time.monotonic()
        found = probe({"bootstrap.servers": f"{hung},{refused}"}, 2.0)
        took = time.monotonic() - began
    assert found[hung] == broker_outcomes.silent(2.0)
    assert found[refused] == broker_outcomes.refused()
    assert took < 2.0 + 2.0, f"the brokers were asked one after another ({took:.1f} s)"


@pytest.mark.parametrize("code,text,said", [
    (KafkaError._TRANSPORT, "Connect to ipv4#127.0.0.1:1 failed: Connection refused", "refused the connection"),
    (KafkaError._SSL, "SSL handshake failed: certificate verify failed", "TLS handshake failed"),
    (KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed", "refused the login"),
    (KafkaError._TIMED_OUT, "ApiVersionRequest failed: Local: Timed out", "accepted no request within 5 s"),
])
def test_librdkafkas_words_become_an_operators(code, text, said):
    assert said in broker_outcomes.from_librdkafka(KafkaError(code, text), 5.0)


class NeverAnswers:
    def list_topics(self, *args, **kwargs):
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out"))


def lookup(monkeypatch, outcomes, bootstrap="never-reached:1"):
    monkeypatch.setattr(lookup_retry, "UNREACHABLE_AFTER_S", 0.3)
    probed = []

    def fake_probe(conf, timeout_s):
        probed.append(conf["bootstrap.servers"])
        return outcomes
    retry = LookupRetry({"bootstrap.servers": bootstrap}, 3.0, lambda conf: NeverAnswers(), probe=fake_probe)
    return retry, probed


def test_a_start_with_no_broker_answering_ends_early_naming_each(monkeypatch):
    retry, probed = lookup(monkeypatch, {"a:1": "refused the connection", "b:2": "accepted no request within 5 s"})
    began = time.monotonic()
    with pytest.raises(BrokersUnreachable, match=r"bootstrap.servers=never-reached:1.*a:1 refused the connection"):
        retry.run(lambda s: retry.admin.list_topics(timeout=s), "source.list_topics")
    assert time.monotonic() - began < 2.5 and probed == ["never-reached:1"]


def test_a_probe_that_finds_a_broker_answering_leaves_the_lookup_its_deadline(monkeypatch):
    retry, probed = lookup(monkeypatch, {"a:1": None, "b:2": "refused the connection"}, "partly-up:1")
    began = time.monotonic()
    with pytest.raises(KafkaException):
        retry.run(lambda s: retry.admin.list_topics(timeout=s), "source.list_topics")
    assert time.monotonic() - began >= 2.9 and probed == ["partly-up:1"], "probed once, then the deadline"


def test_a_cluster_this_process_reached_is_waited_for_until_the_deadline(monkeypatch):
    """A running query's whole-cluster outage: never cut short (it may end within the deadline)."""
    monkeypatch.setattr(lookup_retry, "REACHED", {"reached-before:1"})
    retry, probed = lookup(monkeypatch, {"a:1": "refused the connection"}, "reached-before:1")
    with pytest.raises(KafkaException):
        retry.run(lambda s: retry.admin.list_topics(timeout=s), "source.list_topics")
    assert probed == []
