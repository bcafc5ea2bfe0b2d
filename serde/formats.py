"""The value formats and decode-error policies serde implements, and a schema registry's address."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kafka_eos.secrets import Secret


class DataFormat(str, Enum):
    BYTES = "bytes"
    STRING = "string"
    JSON = "json"
    AVRO = "avro"
    PROTOBUF = "protobuf"


class OnDecodeError(str, Enum):
    FAIL = "fail"
    SKIP = "skip"
    DLQ = "dlq"


class SubjectStrategy(str, Enum):
    """How a subject is named (Confluent's subject name strategies; ``serde.registry_subjects``)."""
    TOPIC = "topic"                # TopicNameStrategy: <topic>-value
    RECORD = "record"              # RecordNameStrategy: <record name>
    TOPIC_RECORD = "topic_record"  # TopicRecordNameStrategy: <topic>-<record name>


@dataclass(frozen=True)
class Registry:
    """A Confluent schema registry; with it Avro, Protobuf and JSON use the wire format (magic byte +
    schema id; Protobuf adds the message indexes). ``subject`` set is used as written; else the
    strategy names it. With ``auto_register`` off the sink registers nothing and writes with the
    subject's latest version, a pinned ``version`` or a pinned ``schema_id``."""
    url: str
    subject: str | None = None
    basic_auth_user_info: Secret | None = None
    subject_strategy: SubjectStrategy = SubjectStrategy.TOPIC
    auto_register: bool = True
    use_latest_version: bool = False
    version: int | None = None
    schema_id: int | None = None

    @property
    def pinned(self) -> bool:
        """Whether the sink writes with a registered schema instead of registering its own."""
        return not self.auto_register

    def settings_text(self) -> str:
        """How subjects are named and what the sink writes with, for ``describe`` (no URL, no secret)."""
        parts = [f" subject {self.subject}" if self.subject else
                 "" if self.subject_strategy is SubjectStrategy.TOPIC else f" subject_strategy {self.subject_strategy.value}"]
        if self.pinned:
            pin = f"id {self.schema_id}" if self.schema_id is not None else \
                f"version {self.version}" if self.version is not None else "the latest version"
            parts.append(f" auto_register off: writes with {pin}")
        return "".join(parts)

    def client_conf(self) -> dict[str, str]:
        conf = {"url": self.url}
        if self.basic_auth_user_info is not None:
            conf["basic.auth.user.info"] = self.basic_auth_user_info.reveal()
        return conf


# The formats read and written with a schema (``schema``, a key's ``key_schema``).
SCHEMA_FORMATS = (DataFormat.JSON, DataFormat.AVRO, DataFormat.PROTOBUF)

# The registry's name of each format's schema type (Confluent's ``schemaType``).
REGISTRY_SCHEMA_TYPES = {DataFormat.AVRO: "AVRO", DataFormat.PROTOBUF: "PROTOBUF", DataFormat.JSON: "JSON"}
