"""The one wording of what a Kafka broker did when a client asked it (refused, silent, TLS, login,
other), so an operator reads the same words whichever client failed (the control plane's
bootstrap: ``from_kafka_python``; ``kafka_eos.broker_reach``'s probe: ``from_librdkafka``). No
setting's value appears in them.
"""
from __future__ import annotations

import ssl

from confluent_kafka import KafkaError


def refused() -> str:
    return "refused the connection (no broker listening on that port)"


def silent(waited_s: float) -> str:
    return f"accepted no request within {waited_s:.0f} s (hung, overloaded, or its packets are dropped)"


def tls(detail: str) -> str:
    return f"TLS handshake failed ({detail[:160]}): check ssl.ca.location and the broker's certificate"


def login(detail: str) -> str:
    return f"refused the login ({detail[:120]}): check the SASL user, password and mechanism"


def no_brokers() -> str:
    return "answered with no live brokers (the cluster is starting, or its brokers are fenced)"


def other(detail: str) -> str:
    return f"failed: {detail[:160]}"


def from_librdkafka(error: KafkaError | None, waited_s: float) -> str:
    """The outcome librdkafka's last error for one broker says (None: no error seen, no answer)."""
    if error is None:
        return silent(waited_s)
    text = error.str()
    if error.code() == KafkaError._AUTHENTICATION or "SASL" in text or "Authentication" in text:
        return login(text)
    if "SSL" in text or error.code() == KafkaError._SSL:
        return tls(text)
    if "refused" in text.lower():
        return refused()
    if "Timed out" in text or error.code() in (KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN):
        return silent(waited_s)
    return other(text)


def from_kafka_python(exc: BaseException, waited_s: float) -> str:
    """The outcome a kafka-python connection's failure says (the control plane's bootstrap)."""
    import kafka.errors as python_errors  # a kafka-python error implies it is loaded; a task never is
    text = str(exc)
    if isinstance(exc, (python_errors.SaslAuthenticationFailedError, python_errors.AuthorizationError)):
        return login(type(exc).__name__)
    if isinstance(exc, ssl.SSLError) or "Handshake failed" in text or "SSL" in text:
        return tls(text)
    timeouts = (python_errors.RequestTimedOutError, python_errors.KafkaTimeoutError, TimeoutError)
    if isinstance(exc, timeouts) or "timed out" in text:
        return silent(waited_s)
    if "refused" in text.lower() or isinstance(exc, ConnectionRefusedError):
        return refused()
    return other(f"{type(exc).__name__}: {text}")
