"""How the broker's answers map to the ACLs a principal lacks (no broker: the pure mapping)."""
from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AclOperation

from kafka_eos.offsets.acl_advice import MissingAcl
from kafka_eos.txn.cluster.acl_checks import error_code, group_answer, probe_answer, topic_answer

ETL = "User:etl"


def _raised(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


def test_a_topic_listing_the_operation_lacks_nothing():
    assert topic_answer(ETL, "in", "Read", [AclOperation.READ, AclOperation.DESCRIBE]) is None
    assert topic_answer(ETL, "out", "Write", [AclOperation.ALL]) is None


def test_a_topic_the_principal_may_only_describe_lacks_the_operation():
    assert topic_answer(ETL, "in", "Read", [AclOperation.DESCRIBE]) == MissingAcl(ETL, "topic", "in", "Read")
    assert topic_answer(ETL, "out", "Write", [AclOperation.DESCRIBE]) == MissingAcl(ETL, "topic", "out", "Write")


def test_a_topic_refused_to_describe_lacks_the_operation():
    denied = _raised(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    assert topic_answer(ETL, "out", "Write", denied) == MissingAcl(ETL, "topic", "out", "Write")


def test_no_answer_reports_nothing():
    assert topic_answer(ETL, "in", "Read", None) is None
    assert topic_answer(ETL, "in", "Read", _raised(KafkaError._DESTROY)) is None
    assert topic_answer(ETL, "in", "Read", _raised(KafkaError.UNKNOWN_TOPIC_OR_PART)) is None
    assert topic_answer(ETL, "in", "Read", TimeoutError()) is None
    assert group_answer(ETL, "g", None) is None
    assert group_answer(ETL, "g", _raised(KafkaError._TIMED_OUT)) is None


def test_a_group_without_read():
    assert group_answer(ETL, "g", [AclOperation.READ, AclOperation.DESCRIBE]) is None
    assert group_answer(ETL, "g", [AclOperation.DESCRIBE]) == MissingAcl(ETL, "group", "g", "Read")
    assert group_answer(ETL, "g", _raised(KafkaError.GROUP_AUTHORIZATION_FAILED)) == MissingAcl(ETL, "group", "g", "Read")


def test_the_transactional_id_probe_answers():
    assert probe_answer(ETL, "orders", _raised(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)) == MissingAcl(
        ETL, "transactional-id", "orders", "Write", prefixed=True)
    assert probe_answer(ETL, "orders", _raised(KafkaError.CLUSTER_AUTHORIZATION_FAILED)) == MissingAcl(
        ETL, "cluster", "kafka-cluster", "IdempotentWrite")
    assert probe_answer(ETL, "orders", None) is None
    assert probe_answer(ETL, "orders", _raised(KafkaError._TIMED_OUT)) is None


def test_error_code_only_of_kafka_errors():
    assert error_code(_raised(KafkaError.TOPIC_AUTHORIZATION_FAILED)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert error_code(RuntimeError("x")) is None


def test_the_message_says_what_the_broker_answered():
    only_describe = topic_answer(ETL, "in", "Read", [AclOperation.DESCRIBE])
    assert "the broker answered: only DESCRIBE allowed" in only_describe.describe()
    denied = probe_answer(ETL, "orders", _raised(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    assert "the broker answered: TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in denied.advice("HOST:PORT")
