"""Where the runbook of each named error is: one mapping, error class name -> section of ``docs/runbooks.md``.

``KafkaEosError`` (``kafka_eos/__init__.py``) ends the message of every error named here, or of a
subclass of one, with `` (runbook: docs/runbooks.md#<anchor>)``; the anchor is the section
heading's GitHub anchor. A message that already names a runbook (it quotes another named error's
message, e.g. a failed run's task error) gets no second one: the quoted error's is the specific one.
Names, not classes: the errors live in layers above this module.
``tests/test_runbooks.py`` fails when an anchor is not a heading of the page or a listed class
does not render it; ``tests/test_runbook_coverage.py`` when an error class of the production
packages has no runbook and is not listed there as one no operator meets.
"""
from __future__ import annotations

PAGE = "docs/runbooks.md"
LOGIN = "refused-login-authenticationfailed-sourceloginrefused"
TLS = "tls-handshake-refused-storeproblem"
ACL = "aclmissingerror-topicauthorizationerror"
CONFIG = "invalid-configuration"
BROKER_SETTINGS = "broker-settings-not-read-clusterunreachable-describeconfigsfailed-settingsrefused"
CHECKPOINT_FILES = "checkpoint-files-refused"
VERIFY_READ = "verify-could-not-read-scanerror-replayerror"
SAVEPOINT_RECORDS = "savepoint-records-savepointconflict-savepointunreadable-rundidnotstop"

ANCHORS: dict[str, str] = {
    "TransactionLostError": "transactionlosterror",
    "ReplayMismatchError": "replaymismatcherror",
    "NothingToAcceptError": "replaymismatcherror",  # kafka-eos accept-loss refusing: the same page
    "SinkLogConflictError": "sinklogconflicterror",
    "StoreFencedError": "storefencederror",
    "RecordsNotFound": "recordsnotfound",
    "PrefixClaimedError": "prefixclaimederror",
    "PrefixClaimAccessError": "prefixclaimaccesserror",
    "CheckpointRetiredError": "checkpointretirederror",
    "SavepointTaken": "savepointtaken",
    "SavepointRefused": "savepointrefused",  # StateNotRebuildable, EventTimesMissing, ReplayBeyondRetention
    "SavepointConflict": SAVEPOINT_RECORDS,
    "SavepointUnreadable": SAVEPOINT_RECORDS,
    "RunDidNotStop": SAVEPOINT_RECORDS,
    "OutputTopicChangedError": "outputtopicchangederror",
    "UnsupportedBrokerError": "unsupportedbrokererror",
    "BrokersUnreachable": "brokersunreachable",
    "AclMissingError": ACL,
    "TopicAuthorizationError": ACL,
    "AuthenticationFailed": LOGIN,
    "SourceLoginRefused": LOGIN,
    "StoreProblem": TLS,
    "KafkaDataLossError": "kafkadatalosserror",
    "NonDeterministicPlanError": "nondeterministicplanerror",
    "CheckpointShapeError": "checkpointshapeerror",
    # a setting, an option, a schema or a query the code refuses: fix what the message names
    "InvalidPipeline": CONFIG,
    "PipelineBuildError": CONFIG,
    "SourceOptionError": CONFIG,
    "OffsetLogScanError": CONFIG,
    "OffsetSpecError": CONFIG,
    "SubscriptionError": CONFIG,
    "SinkConfigError": CONFIG,
    "ClientSettingsError": CONFIG,
    "SchemaError": CONFIG,
    "LateSpecError": CONFIG,
    "RangeRowsError": CONFIG,
    "ValueRefError": CONFIG,
    # the broker's transaction.max.timeout.ms could not be read (the sink's start)
    "BrokerConfigError": BROKER_SETTINGS,
    "ClusterUnreachable": BROKER_SETTINGS,
    "DescribeConfigsFailed": BROKER_SETTINGS,
    "SettingsRefused": BROKER_SETTINGS,
    "OAuthTokenError": "oauthtokenerror",
    "KafkaLookupError": "kafkalookuperror",
    "OutputTopicCheckError": "outputtopiccheckerror",
    "KafkaWriteError": "kafkawriteerror",
    "StaleAttemptError": "kafkawriteerror",
    "TwoPhaseCommitError": "endtxn-not-completed-twophasecommiterror",
    # a file of the checkpoint this build will not read or move on from
    "SinkLogError": CHECKPOINT_FILES,
    "StateTransitionError": CHECKPOINT_FILES,
    "OffsetFormatError": CHECKPOINT_FILES,
    "ShapeRecordError": CHECKPOINT_FILES,
    "LateWatermarkError": CHECKPOINT_FILES,
    "RecordDecodeError": "records-that-fail-to-decode-recorddecodeerror",
    "WriterSchemaUnavailable": "schema-registry-unavailable-writerschemaunavailable",
    "SchemaIncompatible": "registry-schema-refused-schemaincompatible",
    "SubjectError": "registry-schema-refused-schemaincompatible",
    "ScanError": VERIFY_READ,
    "ReplayError": VERIFY_READ,
    "PipelineFailed": "the-run-stopped-with-an-error-pipelinefailed",
    "StopNotSupported": "stopnotsupported",
    "StopRequested": "stoprequested",
    "BrokerEnvironmentError": "java-or-the-local-broker-brokerenvironmenterror",
}


def anchor_of(cls: type) -> str | None:
    """The anchor of ``cls``'s runbook: its own, else its nearest base class's (None: no runbook)."""
    for klass in cls.__mro__:
        anchor = ANCHORS.get(klass.__name__)
        if anchor is not None:
            return anchor
    return None


def suffix(anchor: str) -> str:
    return f" (runbook: {PAGE}#{anchor})"


def ending(cls: type, text: str) -> str:
    """``text`` ending with ``cls``'s runbook anchor (once), or unchanged when it has none or
    already names a runbook."""
    anchor = anchor_of(cls)
    if anchor is None or f" (runbook: {PAGE}#" in text:
        return text
    return text + suffix(anchor)
