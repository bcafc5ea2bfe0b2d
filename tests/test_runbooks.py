"""Every named error's message ends with its runbook's anchor, and every anchor is a section of
docs/runbooks.md (``kafka_eos/runbooks.py`` is the one mapping)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_eos import KafkaEosError, runbooks
from kafka_eos.config.late_records import LateSpecError
from kafka_eos.config.violations import InvalidPipeline, Violation
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError
from kafka_eos.connectors.pipeline.builder import PipelineBuildError
from kafka_eos.connectors.pipeline.checkpoint_compat import CheckpointShapeError
from kafka_eos.connectors.pipeline.late_records import LateWatermarkError
from kafka_eos.connectors.pipeline.pipeline_shape import ShapeRecordError
from kafka_eos.connectors.pipeline.records_check import RecordsNotFound
from kafka_eos.connectors.pipeline.runner import PipelineFailed
from kafka_eos.connectors.pipeline.savepoint import RunDidNotStop, SavepointTaken
from kafka_eos.connectors.pipeline.stop_request import StopRequested
from kafka_eos.connectors.plan_check import NonDeterministicPlanError
from kafka_eos.connectors.source.legacy_reader import OffsetLogScanError
from kafka_eos.connectors.source.options import SourceOptionError
from kafka_eos.connectors.source.planning import KafkaDataLossError
from kafka_eos.connectors.source.range_rows import RangeRowsError
from kafka_eos.connectors.source.value_refs import ValueRefError
from kafka_eos.connectors.source.replay import ReplayError
from kafka_eos.connectors.source.stop_marker import StopNotSupported
from kafka_eos.kafka_clients import BrokersUnreachable
from kafka_eos.oauth_tokens import OAuthTokenError
from kafka_eos.offsets.acl_advice import AclMissingError, MissingAcl
from kafka_eos.offsets.kafka_offsets import TopicAuthorizationError
from kafka_eos.offsets.lookup_retry import KafkaLookupError, SourceLoginRefused
from kafka_eos.offsets.model import OffsetFormatError
from kafka_eos.offsets.rewind import SavepointRefused
from kafka_eos.offsets.spec import OffsetSpecError
from kafka_eos.offsets.subscription import SubscriptionError
from kafka_eos.serde.arrow_types import SchemaError
from kafka_eos.serde.avro_serde import WriterSchemaUnavailable
from kafka_eos.serde.registry_compat import SchemaIncompatible
from kafka_eos.serde.registry_subjects import SubjectError
from kafka_eos.serde.decode_errors import RecordDecodeError
from kafka_eos.truststores import StoreProblem
from kafka_eos.txn.log.savepoints import SavepointConflict, SavepointUnreadable
from kafka_eos.txn.cluster.broker_configs import (AuthenticationFailed, BrokerConfigError, ClusterUnreachable,
                                          DescribeConfigsFailed, SettingsRefused)
from kafka_eos.txn.cluster.broker_support import UnsupportedBrokerError
from kafka_eos.txn.cluster.client_settings import ClientSettingsError
from kafka_eos.txn.protocol.errors import (CheckpointRetiredError, OutputTopicChangedError, OutputTopicCheckError,
                                  PrefixClaimAccessError, PrefixClaimedError, ReplayMismatchError, SinkConfigError,
                                  SinkLogConflictError, SinkLogError, StoreFencedError, TransactionLostError,
                                  TwoPhaseCommitError)
from kafka_eos.txn.writer.kafka_writer import KafkaWriteError, StaleAttemptError
from kafka_eos.txn.protocol.loss_acceptance import NothingToAcceptError
from kafka_eos.txn.audit.output_scan import ScanError
from kafka_eos.txn.protocol.states import StateTransitionError

PAGE = Path(__file__).resolve().parents[1] / runbooks.PAGE
ACL = MissingAcl("User:etl", "topic", "in", "Read")
# one instance of every error the mapping names, built as the code builds it
ERRORS: dict[str, KafkaEosError] = {
    "TransactionLostError": TransactionLostError.of_batch(3, [0, 2], 40, 60_000),
    "ReplayMismatchError": ReplayMismatchError.of_batch(3, [0], 20, 3, 2, "sink partition 0: decided 20, replay 19"),
    "NothingToAcceptError": NothingToAcceptError("/ck/kafka-eos-sink: batch 3 is committed; start the query"),
    "SinkLogConflictError": SinkLogConflictError.of_record("/ck/kafka-eos-sink/3.1.json", 3),
    "RecordsNotFound": RecordsNotFound("checkpoint /ck has committed batches 0-4, but the record store topic "
                                       "_kafka_eos_store-p2 holds no sink log of it"),
    "StoreFencedError": StoreFencedError.of_writer("_kafka_eos_store-p", "driver", "p-store-driver", "ck/3.0.json"),
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
    "InvalidPipeline": InvalidPipeline([Violation("sink.topic", "is required", "name the output topic")]),
    "PipelineBuildError": PipelineBuildError("transform: [UNRESOLVED_COLUMN] ...\n    fix: change the transform"),
    "SourceOptionError": SourceOptionError("option kafka.bootstrap.servers is required"),
    "OffsetLogScanError": OffsetLogScanError("batch 3 of the offset log holds no kafka-eos line"),
    "OffsetSpecError": OffsetSpecError("option startingOffsets='x' is not 'earliest', 'latest' or a JSON offset map"),
    "SubscriptionError": SubscriptionError("option assign names no partitions"),
    "SinkConfigError": SinkConfigError("no topic: set .option('topic', ...) or give the query a 'topic' column"),
    "ClientSettingsError": ClientSettingsError("client setting sasl.mechanism='GSSAPI' cannot be carried", "sasl.mechanism",
                                               "use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"),
    "SchemaError": SchemaError("not a valid Avro schema: ..."),
    "LateSpecError": LateSpecError("the query has 2 different windows; late records are defined for one"),
    "RangeRowsError": RangeRowsError("the sink's input is not the source's offset ranges (columns ['value'])"),
    "ValueRefError": ValueRefError("row 0: its value is not a record reference of the source (emit=valueRefs)"),
    "BrokerConfigError": BrokerConfigError("no answer"),
    "ClusterUnreachable": ClusterUnreachable("Local: Broker transport failure"),
    "DescribeConfigsFailed": DescribeConfigsFailed(1, "CLUSTER_AUTHORIZATION_FAILED"),
    "SettingsRefused": SettingsRefused("No such configuration property: \"sasl.mechanismz\""),
    "OAuthTokenError": OAuthTokenError("OAuth authentication failed: the token endpoint https://idp/token refused "
                                       "client 'etl' (HTTP 401): check sasl.oauthbearer.client.id and ...secret"),
    "KafkaLookupError": KafkaLookupError("could not look up latest (read_committed) offsets within 120s of in-0: ..."),
    "OutputTopicCheckError": OutputTopicCheckError.of_topics(["out"], "no answer in time"),
    "KafkaWriteError": KafkaWriteError("t-0-3-0 (batch 3): record to out[2] (key=b'k', 8003 bytes) failed: ..."),
    "StaleAttemptError": StaleAttemptError("t-0-3-1: batch 3 was decided without this task attempt"),
    "TwoPhaseCommitError": TwoPhaseCommitError("EndTxn(commit) did not complete within 120s for ['t-0-3-0']; the "
                                               "transactions stay decided and are retried on restart"),
    "SinkLogError": SinkLogError("/ck/kafka-eos-sink/3.1.json: sink log format 9 is not 1"),
    "StateTransitionError": StateTransitionError("batch 3: the sink log cannot go from committed to decided"),
    "OffsetFormatError": OffsetFormatError("kafka-eos source offsets of format version None found in the checkpoint"),
    "ShapeRecordError": ShapeRecordError("/ck/kafka-eos-pipeline/0.json: pipeline record format 9 is not 1"),
    "LateWatermarkError": LateWatermarkError("batch 3: the offset log entry /ck/offsets/2 is missing or unreadable"),
    "RecordDecodeError": RecordDecodeError("record in-0@5 failed to decode: invalid JSON: ... (1 of 10 rows)"),
    "WriterSchemaUnavailable": WriterSchemaUnavailable("schema id 7: the schema registry at http://r:8081 failed"),
    "SchemaIncompatible": SchemaIncompatible("the sink's schema breaks subject out-value's compatibility level BACKWARD "
                                             "against its version 3 (id 40): field channel: ..."),
    "SubjectError": SubjectError("sink.schema.registry: the record strategy names the subject after the record, "
                                 "and the schema names none"),
    "ScanError": ScanError("out[0]: Fetch at offset 10 failed with error code 29"),
    "ReplayError": ReplayError("batch 4: the recorded offset log has 2 ends for a scan starting at {}"),
    "PipelineFailed": PipelineFailed("pipeline p (p.yaml) failed: ValueError: boom\nNothing of the failed batch was "
                                     "committed; a new run resumes from the checkpoint."),
    "StopNotSupported": StopNotSupported("no stop marker can be placed in abfss://c/ck (...): stop the run with "
                                         "SIGTERM or Ctrl-C"),
    "BrokerEnvironmentError": BrokerEnvironmentError("Java not found: the local Kafka broker needs Java 17+"),
    "StopRequested": StopRequested.of_request("/ck/kafka-eos-stop-requested", "requested 2026-11-28T10:00:00Z"),
    "SavepointTaken": SavepointTaken("a savepoint was taken of checkpoint /ck after batch 7 (/ck/kafka-eos-sink/"
                                     "_savepoint): the checkpoint writes nothing more"),
    "SavepointRefused": SavepointRefused("a savepoint cannot carry this pipeline's state yet: sliding windows longer "
                                         "than their slide"),
    "SavepointConflict": SavepointConflict("/sp/savepoint.json: a savepoint record exists with other content"),
    "SavepointUnreadable": SavepointUnreadable("/sp/savepoint.json: no savepoint record there"),
    "RunDidNotStop": RunDidNotStop("/ck: the run did not stop within 600 s"),
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


def test_a_message_quoting_a_named_error_keeps_its_runbook_alone():
    """A failed run quotes its task's error, whose runbook is the specific one: no second link."""
    quoted = PipelineFailed(f"pipeline p (p.yaml) failed: TransactionLostError: {ERRORS['TransactionLostError']}")
    assert str(quoted).endswith("(runbook: docs/runbooks.md#transactionlosterror)")
    assert str(quoted).count("(runbook:") == 1
    refused = ClientSettingsError("client setting sasl.mechanism='OAUTHBEARER' cannot be carried", "sasl.mechanism",
                                  str(ERRORS["OAuthTokenError"]))
    assert str(refused).count("(runbook:") == 1 and "#oauthtokenerror" in str(refused)


def test_a_subclass_ends_with_its_base_class_runbook_and_other_errors_with_none():
    class LateLoss(TransactionLostError):
        pass
    assert str(LateLoss("x")) == "x (runbook: docs/runbooks.md#transactionlosterror)"
    assert str(KafkaEosError("plain")) == "plain"
    assert str(ERRORS["StoreProblem"]).startswith("ssl.truststore.location: /x.p12: no such file; fix: ")  # own __str__
