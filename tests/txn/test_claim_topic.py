"""ClaimTopic reads through transient errors (a claim topic just created has no leader yet) and
refuses at once what retrying cannot fix."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos.txn.claim_topic import ClaimClients, ClaimTopic
from kafka_eos.txn.errors import PrefixClaimAccessError


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
                      ClaimClients(consumer=lambda conf: consumer))


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
