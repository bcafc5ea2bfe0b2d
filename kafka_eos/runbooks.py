"""Where the runbook of each named error is: one mapping, error class name -> section of ``docs/runbooks.md``.

``KafkaEosError`` (``kafka_eos/__init__.py``) ends the message of every error named here, or of a
subclass of one, with `` (runbook: docs/runbooks.md#<anchor>)``; the anchor is the section
heading's GitHub anchor. Names, not classes: the errors live in layers above this module.
``tests/test_runbooks.py`` fails when an anchor is not a heading of the page or a listed class
does not render it.
"""
from __future__ import annotations

PAGE = "docs/runbooks.md"
LOGIN = "refused-login-authenticationfailed-sourceloginrefused"
TLS = "tls-handshake-refused-storeproblem"
ACL = "aclmissingerror-topicauthorizationerror"

ANCHORS: dict[str, str] = {
    "TransactionLostError": "transactionlosterror",
    "ReplayMismatchError": "replaymismatcherror",
    "NothingToAcceptError": "replaymismatcherror",  # kafka-eos accept-loss refusing: the same page
    "SinkLogConflictError": "sinklogconflicterror",
    "PrefixClaimedError": "prefixclaimederror",
    "PrefixClaimAccessError": "prefixclaimaccesserror",
    "CheckpointRetiredError": "checkpointretirederror",
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
    """``text`` ending with ``cls``'s runbook anchor (once), or unchanged when it has none."""
    anchor = anchor_of(cls)
    if anchor is None or text.endswith(suffix(anchor)):
        return text
    return text + suffix(anchor)
