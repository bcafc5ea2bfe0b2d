"""The source's named-topic listing and the ACL advice it gives."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kafka_eos import KafkaEosError
from kafka_eos.offsets.acl_advice import MissingAcl, principal_of
from kafka_eos.offsets.kafka_offsets import (KafkaLookupError, TopicAuthorizationError, named_listing,
                                             named_topics)
from kafka_eos.offsets.subscription import Subscription

CONF = {"bootstrap.servers": "kafka:9093", "sasl.username": "etl"}


def test_named_topics_of_each_subscription_kind():
    assert named_topics(Subscription.parse("subscribe", "b,a")) == ("a", "b")
    assert named_topics(Subscription.parse("assign", '{"x": [0, 1], "y": [0]}')) == ("x", "y")
    assert named_topics(Subscription.parse("subscribePattern", "a.*")) == ()
    assert named_topics(None) == ()


def test_an_unauthorized_topic_raises_naming_principal_topic_and_acl():
    answers = {"ok": [1, 0], "forbidden": KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)}
    with pytest.raises(TopicAuthorizationError) as caught:
        named_listing(answers, CONF)
    message = str(caught.value)
    assert isinstance(caught.value, KafkaEosError)
    assert "User:etl" in message and "'forbidden'" in message and "TOPIC_AUTHORIZATION_FAILED" in message
    assert ("kafka-acls --bootstrap-server kafka:9093 --add --allow-principal User:etl --operation Read "
            "--topic forbidden") in message


def test_a_nonexistent_topic_is_left_out_as_before():
    answers = {"ok": [1, 0], "absent": KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)}
    assert named_listing(answers, CONF) == {"ok": [0, 1]}


def test_another_topic_error_is_a_lookup_error():
    with pytest.raises(KafkaLookupError, match="bad: TOPIC_EXCEPTION"):
        named_listing({"bad": KafkaError(KafkaError.TOPIC_EXCEPTION)}, CONF)


def test_principal_placeholder_without_sasl_username():
    assert principal_of({}) == "User:<your-principal>"


def test_transactional_id_prefix_command():
    acl = MissingAcl("User:etl", "transactional-id", "orders-json", "Write", prefixed=True)
    assert acl.command("HOST:PORT") == ("kafka-acls --bootstrap-server HOST:PORT --add --allow-principal User:etl "
                                        "--operation Write --transactional-id orders-json "
                                        "--resource-pattern-type prefixed")
    assert MissingAcl("User:etl", "cluster", "kafka-cluster", "IdempotentWrite").command("h:1").endswith(
        "--operation IdempotentWrite --cluster")
