"""Authentication failures told apart from network faults.

librdkafka reports a refused SASL login (wrong password, unknown user) only through its error
callback (``_AUTHENTICATION``: "SASL authentication error: ... invalid credentials with SASL
mechanism SCRAM-SHA-512"); the request that was waiting (a metadata request) just times out with
"Broker transport failure". ``AuthWatch`` is that callback: it keeps the last authentication
error, and ``failure`` turns it into the sentence callers show, naming the user and the mechanism,
never the password.
"""
from __future__ import annotations

from typing import Mapping

from confluent_kafka import KafkaError



class AuthWatch:
    """A librdkafka ``error_cb`` that remembers the last authentication error."""

    def __init__(self) -> None:
        self.last: str | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            self.last = error.str()


def failure(conf: Mapping[str, object], detail: str) -> tuple[str, str]:
    """(what failed, the fix) for librdkafka's ``detail`` of an authentication error under ``conf``."""
    user = conf.get("sasl.username") or "(no sasl.username)"
    mechanism = str(conf.get("sasl.mechanism") or conf.get("sasl.mechanisms") or "GSSAPI").upper()
    what = (f"authentication failed for user {user!r} with SASL mechanism {mechanism} "
            f"(security.protocol {conf.get('security.protocol', 'PLAINTEXT')}): {detail}")
    fix = (f"check sasl.username and sasl.password (or the ${{VARS}} they are read from) against the user's "
           f"{mechanism} credential on the brokers, e.g. kafka-configs --bootstrap-server <host:port> --describe "
           f"--entity-type users --entity-name {user}")
    return what, fix
