"""One source lookup retried within one deadline, on a new AdminClient per retry, with a refused
login named (``KafkaOffsets``'s calls all go through ``LookupRetry.run``).

Invariants:
- One request waits at most ``request_s(call)``; transient failures (``kafka_clients.is_transient``)
  are retried with backoff within ONE deadline per call (``timeout_s``); a non-transient error
  fails at once; the last error is re-raised. Each retry builds a new AdminClient (new metadata,
  no connection to a broker that hung); ``admin`` is always the current one.
- A login the brokers refuse is ``SourceLoginRefused`` naming the user and the mechanism, never
  the password (``txn.auth_errors``: librdkafka reports it only to the client's ``error_cb``, the
  request just times out as a transport failure). ``LoginRefusals`` holds that state: before any
  call of this object has answered, a refusal fails at once (the settings are wrong); after, it
  is retried like a transport failure (a restarting broker may refuse logins until its
  credentials load) and named if the deadline passes with the login still refused.
"""
from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Mapping, TypeVar

from confluent_kafka import KafkaException
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kafka_eos import KafkaEosError
from kafka_eos.client_factory import AdminFactory
from kafka_eos.kafka_clients import PartialFailure, is_transient, request_s
from kafka_eos.txn.auth_errors import AuthWatch, failure

T = TypeVar("T")
FAILED = (KafkaException, TimeoutError, FutureTimeout, ConnectionError)


class KafkaLookupError(KafkaEosError, RuntimeError):
    """Kafka did not answer a metadata or offset lookup."""


class SourceLoginRefused(KafkaLookupError):
    """The brokers refused the source's SASL login; ``fix`` says what to check."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(f"the kafka-eos source cannot log in to Kafka: {what}; fix: {fix}")
        self.fix = fix


class LoginRefusals:
    """Whether a failed call was a refused login, and whether to name it at once (no call has
    answered yet) or only at the deadline. ``watch`` is the clients' ``error_cb``."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._conf = conf
        self.watch = AuthWatch()
        self.answered = False

    def error(self, refused: str) -> SourceLoginRefused:
        return SourceLoginRefused(*failure(self._conf, refused))

    def behind(self, admin: object, exc: BaseException) -> str | None:
        """librdkafka's words for the refused login behind ``exc`` of ``admin`` (None if the login was
        not refused); raises ``SourceLoginRefused`` at once while no call has answered."""
        refused = self.watch.behind(admin, exc)
        if refused and not self.answered:
            raise self.error(refused) from None
        return refused


class LookupRetry:
    """The AdminClient of a ``KafkaOffsets`` (``admin``; ``new_admin`` builds one at start and one
    per retry) and its calls' retries."""

    def __init__(self, conf: Mapping[str, str], timeout_s: float, new_admin: AdminFactory) -> None:
        self._conf = dict(conf)
        self.logins = LoginRefusals(self._conf)
        self._new_admin = new_admin
        self.timeout_s = timeout_s
        self.admin = new_admin(self._client_conf())

    def _client_conf(self) -> dict[str, object]:
        return {**self._conf, "error_cb": self.logins.watch}

    def run(self, attempt: Callable[[float], T], call: str) -> T:
        """Run ``attempt(seconds for this request)`` until it succeeds, a non-transient error or the
        call's one deadline (``timeout_s``) passes; the last error is re-raised, or
        ``SourceLoginRefused`` (see the module's invariants)."""
        deadline = time.monotonic() + self.timeout_s
        retrying = Retrying(stop=stop_after_delay(self.timeout_s), reraise=True,
                            wait=wait_exponential(multiplier=0.1, max=2.0), retry=retry_if_exception(is_transient))
        refused: str | None = None
        try:
            for try_ in retrying:
                with try_:
                    if try_.retry_state.attempt_number > 1:
                        self.admin = self._new_admin(self._client_conf())
                    self.logins.watch.reset(self.admin)
                    try:
                        answer = attempt(max(0.5, min(request_s(call), deadline - time.monotonic())))
                    except Exception as exc:
                        refused = self.logins.behind(self.admin, exc)
                        raise
                    self.logins.answered = True
                    return answer
        except (*FAILED, PartialFailure):
            if refused:
                raise self.logins.error(refused) from None
            raise
        raise AssertionError("unreachable")  # pragma: no cover - tenacity re-raises or returns
