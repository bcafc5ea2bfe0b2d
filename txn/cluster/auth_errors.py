"""Authentication failures told apart from network faults.

librdkafka reports a refused SASL login (wrong password, unknown user) only through its error
callback (``_AUTHENTICATION``: "SASL authentication error: ... invalid credentials with SASL
mechanism SCRAM-SHA-512"); the request that was waiting (a metadata request) just times out with
"Broker transport failure". ``AuthWatch`` is that callback: it keeps the last authentication
error, and ``failure`` turns it into the sentence callers show, naming the user and the mechanism,
never the password. ``behind`` is the one test of whether a failed call was a refused login (the
CLI's checks, ``txn.broker_configs``, and the source's lookups, ``offsets.kafka_offsets``).

A TLS handshake the two sides cannot complete is refused the same way: the brokers' certificate
not trusted (``_SSL`` "SSL handshake failed: ... certificate verify failed"), or the client's
certificate missing or not trusted by the brokers (``ssl.client.auth=required``: the broker's
alert arrives as ``_TRANSPORT`` "... ssl/tls alert bad certificate: SSL alert number 42").
``failure`` names which side's certificate and the settings that fix it.
"""
from __future__ import annotations

from typing import Mapping

from confluent_kafka import KafkaError, KafkaException


_TLS_ALERT = "SSL alert number"  # OpenSSL's words for an alert the peer sent during the handshake


def refusal(error: KafkaError) -> bool:
    """Whether librdkafka's ``error`` says the brokers refused this client (login or TLS handshake)."""
    code = error.code()
    return code in (KafkaError._AUTHENTICATION, KafkaError._SSL) or (
        code == KafkaError._TRANSPORT and _TLS_ALERT in error.str())


class AuthWatch:
    """A librdkafka ``error_cb`` that remembers the last authentication error."""

    def __init__(self) -> None:
        self.last: str | None = None

    def __call__(self, error: KafkaError) -> None:
        if refusal(error):
            self.last = error.str()

    @staticmethod
    def serve(client: object) -> None:
        """Run the callbacks librdkafka queued for ``client`` (its ``poll``; a fake may have none)."""
        poll = getattr(client, "poll", None)
        if poll is not None:
            poll(0)

    def reset(self, client: object) -> None:
        """Forget what was seen so far (queued callbacks included): before a call."""
        self.serve(client)
        self.last = None

    def behind(self, client: object, exc: BaseException) -> str | None:
        """librdkafka's words for the refused login behind the failed call ``exc`` of ``client`` (whose
        ``error_cb`` is this watch): the exception's own _AUTHENTICATION error, else the last one the
        callback saw; None when nothing says the login was refused."""
        error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
        if isinstance(error, KafkaError) and refusal(error):
            return error.str()
        self.serve(client)
        return self.last


def _tls_failure(conf: Mapping[str, object], detail: str) -> tuple[str, str]:
    what = f"the TLS handshake with the brokers failed (security.protocol {conf.get('security.protocol')}): {detail}"
    if "certificate verify failed" in detail:
        return what, ("the brokers' certificate is not signed by a CA this client trusts: set ssl.ca.location (PEM) "
                      "or ssl.truststore.location (PKCS12) to the brokers' CA")
    return what, ("the brokers refused this client's certificate, or it sent none (they require one: "
                  "ssl.client.auth=required): set ssl.keystore.location and ssl.keystore.password (PKCS12), or "
                  "ssl.certificate.location and ssl.key.location, to a certificate signed by a CA the brokers trust")


def failure(conf: Mapping[str, object], detail: str) -> tuple[str, str]:
    """(what failed, the fix) for librdkafka's ``detail`` of an authentication error under ``conf``."""
    if "SSL handshake failed" in detail or _TLS_ALERT in detail:
        return _tls_failure(conf, detail)
    user = conf.get("sasl.username") or "(no sasl.username)"
    mechanism = str(conf.get("sasl.mechanism") or conf.get("sasl.mechanisms") or "GSSAPI").upper()
    what = (f"authentication failed for user {user!r} with SASL mechanism {mechanism} "
            f"(security.protocol {conf.get('security.protocol', 'PLAINTEXT')}): {detail}")
    fix = (f"check sasl.username and sasl.password (or the ${{VARS}} they are read from) against the user's "
           f"{mechanism} credential on the brokers, e.g. kafka-configs --bootstrap-server <host:port> --describe "
           f"--entity-type users --entity-name {user}")
    return what, fix
