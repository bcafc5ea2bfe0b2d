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


@dataclass(frozen=True)
class Registry:
    """A Confluent schema registry; with it Avro, Protobuf and JSON use the wire format (magic byte +
    schema id; Protobuf adds the message indexes)."""
    url: str
    subject: str | None = None
    basic_auth_user_info: Secret | None = None

    def client_conf(self) -> dict[str, str]:
        conf = {"url": self.url}
        if self.basic_auth_user_info is not None:
            conf["basic.auth.user.info"] = self.basic_auth_user_info.reveal()
        return conf


# The registry's name of each format's schema type (Confluent's ``schemaType``).
REGISTRY_SCHEMA_TYPES = {DataFormat.AVRO: "AVRO", DataFormat.PROTOBUF: "PROTOBUF", DataFormat.JSON: "JSON"}
