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


class OnDecodeError(str, Enum):
    FAIL = "fail"
    SKIP = "skip"
    DLQ = "dlq"


@dataclass(frozen=True)
class Registry:
    """A Confluent schema registry; with it Avro uses the wire format (magic byte + schema id)."""
    url: str
    subject: str | None = None
    basic_auth_user_info: Secret | None = None

    def client_conf(self) -> dict[str, str]:
        conf = {"url": self.url}
        if self.basic_auth_user_info is not None:
            conf["basic.auth.user.info"] = self.basic_auth_user_info.reveal()
        return conf
