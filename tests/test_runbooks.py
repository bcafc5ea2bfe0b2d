"""Every named error's message ends with its runbook's anchor, and every anchor is a section of
docs/runbooks.md (``kafka_eos/runbooks.py`` is the one mapping)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_eos import KafkaEosError, runbooks
from kafka_eos.connectors.pipeline.checkpoint_compat import CheckpointShapeError
from kafka_eos.connectors.plan_check import NonDeterministicPlanError
from kafka_eos.connectors.source.planning import KafkaDataLossError
from kafka_eos.kafka_clients import BrokersUnreachable
from kafka_eos.offsets.acl_advice import AclMissingError, MissingAcl
from kafka_eos.offsets.kafka_offsets import TopicAuthorizationError
from kafka_eos.offsets.lookup_retry import SourceLoginRefused
from kafka_eos.truststores import StoreProblem
from kafka_eos.txn.broker_configs import AuthenticationFailed
from kafka_eos.txn.broker_support import UnsupportedBrokerError
from kafka_eos.txn.errors import (CheckpointRetiredError, OutputTopicChangedError, PrefixClaimAccessError,
                                  PrefixClaimedError, ReplayMismatchError, SinkLogConflictError, TransactionLostError)
from kafka_eos.txn.loss_acceptance import NothingToAcceptError

PAGE = Path(__file__).resolve().parents[1] / runbooks.PAGE
ACL = MissingAcl("User:etl", "topic", "in", "Read")
# one instance of every error the mapping names, built as the code builds it
ERRORS: dict[str, KafkaEosError] = {
    "TransactionLostError": TransactionLostError.of_batch(3, [0, 2], 40, 60_000),
    "ReplayMismatchError": ReplayMismatchError.of_batch(3, [0], 20, 3, 2, "sink partition 0: decided 20, replay 19"),
    "NothingToAcceptError": NothingToAcceptError("/ck/kafka-eos-sink: batch 3 is committed; start the query"),
    "SinkLogConflictError": SinkLogConflictError.of_record("/ck/kafka-eos-sink/3.1.json", 3),
    "PrefixClaimedError": PrefixClaimedError.of_claims("p", "/a", "/b", "2026-11-27T10:00:00+00:00", "h",
                                                       "_kafka_eos_prefix_claims"),
    "PrefixClaimAccessError": PrefixClaimAccessError.of_topic("_kafka_eos_prefix_claims", "read", "denied"),
    "CheckpointRetiredError": CheckpointRetiredError.of_marker("/ck/kafka-eos-sink/_retired.json", "2026-11-27"),
    "OutputTopicChangedError": OutputTopicChangedError.of_changes([], fixed_partitions=False),
    "UnsupportedBrokerError": UnsupportedBrokerError("Kafka broker 1 is Kafka 3.6"),
    "BrokersUnreachable": BrokersUnreachable("b1:9092", {"b1:9092": "refused the connection"}, 60.0),
    "AclMissingError": AclMissingError([ACL], "b1:9092", "the kafka-eos sink cannot start"),
    "TopicAuthorizationError": TopicAuthorizationError([ACL], "b1:9092"),
    "AuthenticationFailed": AuthenticationFailed("authentication failed for user 'etl'", "check the password"),
    "SourceLoginRefused": SourceLoginRefused("authentication failed for user 'etl'", "check the password"),
    "StoreProblem": StoreProblem("ssl.truststore.location", "/x.p12: no such file", "point it at the truststore"),
    "KafkaDataLossError": KafkaDataLossError("Kafka data loss in topic 'in' partition 0: ...\nand another"),
    "NonDeterministicPlanError": NonDeterministicPlanError.of([]),
    "CheckpointShapeError": CheckpointShapeError("this pipeline reads each batch's offsets 2 time(s). Fix: ..."),
}


def anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings() -> set[str]:
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", PAGE.read_text(), re.MULTILINE)}


def test_every_anchor_is_a_section_of_the_page():
    missing = sorted(set(runbooks.ANCHORS.values()) - headings())
    assert missing == [], f"{runbooks.PAGE} has no section for {missing}"


def test_the_page_links_only_to_its_own_sections():
    links = set(re.findall(r"\]\(#([\w-]+)\)", PAGE.read_text()))
    assert links and links <= headings(), sorted(links - headings())


def test_every_named_error_is_built_here():
    assert set(ERRORS) == set(runbooks.ANCHORS)
    assert all(type(e).__name__ == name for name, e in ERRORS.items())


@pytest.mark.parametrize("name", sorted(runbooks.ANCHORS))
def test_the_message_ends_with_its_runbook_once(name):
    text = str(ERRORS[name])
    ending = f" (runbook: docs/runbooks.md#{runbooks.ANCHORS[name]})"
    assert text.endswith(ending) and text.count("(runbook:") == 1, text


def test_a_subclass_ends_with_its_base_class_runbook_and_other_errors_with_none():
    class LateLoss(TransactionLostError):
        pass
    assert str(LateLoss("x")) == "x (runbook: docs/runbooks.md#transactionlosterror)"
    assert str(KafkaEosError("plain")) == "plain"
    assert str(ERRORS["StoreProblem"]).startswith("ssl.truststore.location: /x.p12: no such file; fix: ")  # own __str__
