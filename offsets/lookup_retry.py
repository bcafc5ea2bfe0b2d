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
- A cluster no lookup of this process has reached yet (a query's start) is given up on after
  ``UNREACHABLE_AFTER_S`` when a probe finds no listed broker answering (``Unreachable``):
  ``BrokersUnreachable`` names each broker and what it did, instead of the lookup's last error at
  its deadline. Once reached, an outage is waited for until the deadline.
"""
from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Mapping, Optional, TypeVar

from confluent_kafka import KafkaException
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_delay, stop_any, wait_exponential
from tenacity.stop import stop_base

from kafka_eos import KafkaEosError, broker_reach
from kafka_eos.client_factory import AdminFactory
from kafka_eos.kafka_clients import BrokersUnreachable, PartialFailure, is_transient, request_s
from kafka_eos.txn.cluster.auth_errors import AuthWatch, failure

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


Probe = Callable[[Mapping[str, Any], float], Mapping[str, Optional[str]]]
UNREACHABLE_AFTER_S = 45.0  # a lookup failing this long, no lookup of the process answered yet: probe the brokers
PROBE_S = 5.0
REACHED: set[str] = set()   # bootstrap lists a lookup of this process has had an answer from


class Unreachable(stop_base):
    """A stop condition of one lookup: the cluster never answered this process, the lookup failed
    for ``UNREACHABLE_AFTER_S``, and a probe (once) finds no listed broker answering; then
    ``outcomes`` says what each did. A cluster that answered once in this process (a running
    query's outage) is waited for until the lookup's own deadline."""

    def __init__(self, conf: Mapping[str, Any], probe: Probe) -> None:
        self.bootstrap = str(conf.get("bootstrap.servers", ""))
        self._conf, self._probe, self._began = conf, probe, time.monotonic()
        self._probed = False
        self.outcomes: dict[str, str] = {}

    def waited_s(self) -> float:
        return time.monotonic() - self._began

    def __call__(self, retry_state: RetryCallState) -> bool:
        if self._probed or self.bootstrap in REACHED or self.waited_s() < UNREACHABLE_AFTER_S:
            return False
        self._probed = True
        found = self._probe(self._conf, PROBE_S)
        if found and all(outcome is not None for outcome in found.values()):
            self.outcomes = {address: str(outcome) for address, outcome in found.items()}
        return bool(self.outcomes)


class LookupRetry:
    """The AdminClient of a ``KafkaOffsets`` (``admin``; ``new_admin`` builds one at start and one
    per retry) and its calls' retries."""

    def __init__(self, conf: Mapping[str, str], timeout_s: float, new_admin: AdminFactory,
                 probe: Probe = broker_reach.probe) -> None:
        self._conf = dict(conf)
        self.logins = LoginRefusals(self._conf)
        self._new_admin, self._probe = new_admin, probe
        self.timeout_s = timeout_s
        self.admin = new_admin(self._client_conf())

    def _client_conf(self) -> dict[str, object]:
        return {**self._conf, "error_cb": self.logins.watch}

    def run(self, attempt: Callable[[float], T], call: str) -> T:
        """Run ``attempt(seconds for this request)`` until it succeeds, a non-transient error or the
        call's one deadline (``timeout_s``) passes; the last error is re-raised, or
        ``SourceLoginRefused`` (see the module's invariants)."""
        deadline = time.monotonic() + self.timeout_s
        unreachable = Unreachable(self._conf, self._probe)
        retrying = Retrying(stop=stop_any(stop_after_delay(self.timeout_s), unreachable), reraise=True,
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
                    REACHED.add(unreachable.bootstrap)
                    return answer
        except (*FAILED, PartialFailure):
            if refused:
                raise self.logins.error(refused) from None
            if unreachable.outcomes:
                raise BrokersUnreachable(unreachable.bootstrap, unreachable.outcomes, unreachable.waited_s()) from None
            raise
        raise AssertionError("unreachable")  # pragma: no cover - tenacity re-raises or returns
