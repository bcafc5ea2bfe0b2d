"""What to tell a user the cluster's ACLs refuse: the principal, the resource and the exact
``kafka-acls`` command that grants the missing operation.

Pure: no Kafka calls. The source (``kafka_offsets``), ``kafka-eos validate`` (``config.live``) and
the sink's start checks build ``MissingAcl`` values and raise ``AclMissingError``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kafka_eos import KafkaEosError

UNKNOWN_PRINCIPAL = "User:<your-principal>"
_FLAGS = {"topic": "--topic", "group": "--group", "transactional-id": "--transactional-id", "cluster": "--cluster"}
# What each operation is needed for, as the message says it.
_WHY = {("topic", "Read"): "to read the source topic", ("topic", "Describe"): "to see the topic's partitions",
        ("topic", "Write"): "to write the sink topic", ("group", "Read"): "to commit the source's group offsets",
        ("transactional-id", "Write"): "to open the sink's Kafka transactions",
        ("transactional-id", "Describe"): "to open the sink's Kafka transactions",
        ("cluster", "IdempotentWrite"): "for the sink's idempotent, transactional producers"}


def principal_of(conf: Mapping[str, str]) -> str:
    """``User:<sasl.username>`` of a librdkafka configuration, or a placeholder when it has none."""
    user = conf.get("sasl.username")
    return f"User:{user}" if user else UNKNOWN_PRINCIPAL


@dataclass(frozen=True)
class MissingAcl:
    """One operation ``principal`` may not perform on one resource (``prefixed``: a name prefix;
    ``answer``: what the broker said, e.g. TOPIC_AUTHORIZATION_FAILED, if known)."""
    principal: str
    resource_type: str  # topic | group | transactional-id | cluster
    resource: str
    operation: str  # Kafka's operation name: Read, Write, Describe, IdempotentWrite, ...
    prefixed: bool = False
    answer: str = field(default="", compare=False)

    def command(self, bootstrap: str) -> str:
        flag = _FLAGS[self.resource_type]
        target = flag if self.resource_type == "cluster" else f"{flag} {self.resource}"
        pattern = " --resource-pattern-type prefixed" if self.prefixed else ""
        return (f"kafka-acls --bootstrap-server {bootstrap or 'HOST:PORT'} --add --allow-principal {self.principal} "
                f"--operation {self.operation} {target}{pattern}")

    def describe(self) -> str:
        what = "the cluster" if self.resource_type == "cluster" else (
            f"{self.resource_type} {'prefix ' if self.prefixed else ''}{self.resource!r}")
        notes = [f"needed {why}" for why in [_WHY.get((self.resource_type, self.operation))] if why]
        notes += [f"the broker answered: {self.answer}"] if self.answer else []
        return f"{self.principal} may not {self.operation} {what}" + (f" ({'; '.join(notes)})" if notes else "")

    def advice(self, bootstrap: str) -> str:
        return f"{self.describe()}; grant it with: {self.command(bootstrap)}"


def advice(missing: Iterable[MissingAcl], bootstrap: str) -> str:
    return "; ".join(m.advice(bootstrap) for m in missing)


class AclMissingError(KafkaEosError, PermissionError):
    """The cluster's ACLs refuse an operation the pipeline needs; the message says what to grant."""

    def __init__(self, missing: Iterable[MissingAcl], bootstrap: str, context: str = "") -> None:
        self.missing = tuple(missing)
        self.bootstrap = bootstrap
        prefix = f"{context}: " if context else ""
        super().__init__(f"{prefix}Kafka ACLs refuse what the pipeline needs: {advice(self.missing, bootstrap)}")
