"""ClaimTopic reads through transient errors (a claim topic just created has no leader yet) and
refuses at once what retrying cannot fix."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos.client_factory import QuietClients
from kafka_eos.txn.topics.claim_topic import ClaimTopic
from kafka_eos.txn.protocol.errors import PrefixClaimAccessError


class FakeConsumer:
    """Watermark answers in turn: an exception is raised, a tuple returned; no records."""

    def __init__(self, answers: list) -> None:
        self.answers, self.calls, self.closed = answers, 0, False

    def get_watermark_offsets(self, partition, timeout):
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def close(self) -> None:
        self.closed = True


def claims(consumer: FakeConsumer, timeout_s: float = 5.0) -> ClaimTopic:
    return ClaimTopic({"bootstrap.servers": "localhost:1"}, "_claims", timeout_s,
                      QuietClients(consumer=lambda conf: consumer))


def error(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


def test_a_topic_without_a_leader_yet_is_read_once_it_has_one():
    consumer = FakeConsumer([error(KafkaError.NOT_LEADER_FOR_PARTITION), error(KafkaError._UNKNOWN_PARTITION),
                             error(KafkaError.LEADER_NOT_AVAILABLE), (0, 0)])
    assert claims(consumer).read("p") == ([], 0)
    assert consumer.calls == 4 and consumer.closed


def test_a_denied_read_is_refused_at_once_naming_the_topic():
    consumer = FakeConsumer([error(KafkaError.TOPIC_AUTHORIZATION_FAILED)])
    with pytest.raises(PrefixClaimAccessError, match="_claims"):
        claims(consumer).read("p")
    assert consumer.calls == 1


def test_a_leader_that_never_comes_is_refused_after_the_timeout():
    consumer = FakeConsumer([error(KafkaError.NOT_LEADER_FOR_PARTITION)])
    with pytest.raises(PrefixClaimAccessError, match="Not leader|NOT_LEADER"):
        claims(consumer, timeout_s=0.5).read("p")
    assert consumer.calls > 1


def test_a_hung_leader_is_left_for_a_new_consumer_with_fresh_metadata():
    """CI, 2026-11-28: the claim partition's leader hung during a restart's start; one consumer
    asked it for the whole call timeout and the query stopped (PrefixClaimAccessError, Timed out).
    Each attempt now asks on a new consumer, each request bounded by the table's 10 s."""
    from kafka_eos.kafka_clients import request_s
    hung = FakeConsumer([error(KafkaError._TIMED_OUT)])     # its metadata points at the hung broker
    moved = FakeConsumer([(0, 0)])                          # fresh metadata: the new leader answers
    built = iter([hung, moved])
    timeouts: list[float] = []
    for consumer in (hung, moved):
        answer = consumer.get_watermark_offsets

        def bounded(partition, timeout, answer=answer):
            timeouts.append(timeout)
            return answer(partition, timeout)
        consumer.get_watermark_offsets = bounded
    store = ClaimTopic({"bootstrap.servers": "localhost:1"}, "_claims", 120.0,
                       QuietClients(consumer=lambda conf: next(built)))
    assert store.read("p") == ([], 0)
    assert hung.closed and moved.closed
    assert timeouts == [request_s("sink.prefix_claim")] * 2 and timeouts[0] <= 10


def test_the_topic_lookup_leaves_a_hung_broker_for_a_new_client():
    """The same at the lookup before the read: a metadata request to a hung broker is bounded by
    10 s and the retry asks on a new client."""
    from types import SimpleNamespace

    from kafka_eos.kafka_clients import request_s
    timeouts: list[float] = []

    class Admin:
        def __init__(self, answer) -> None:
            self.answer = answer

        def list_topics(self, topic, timeout):
            timeouts.append(timeout)
            if isinstance(self.answer, BaseException):
                raise self.answer
            return self.answer
    known = SimpleNamespace(topics={"_claims": SimpleNamespace(error=None)})
    built = iter([Admin(error(KafkaError._TRANSPORT)), Admin(known)])
    store = ClaimTopic({"bootstrap.servers": "localhost:1"}, "_claims", 120.0,
                       QuietClients(admin=lambda conf: next(built)))
    assert store.exists()
    assert timeouts == [request_s("sink.prefix_claim")] * 2
