"""The control plane's bootstrap tries every listed broker, each briefly, and names what each did.

Real sockets stand in for brokers at the TCP level: a listener whose accepted connections are
never read is what a hung broker's kernel gives (the connection is accepted, nothing answers); a
port with no listener refuses. kafka-python's own bootstrap picked one listed broker at random and
gave it the whole deadline, so a hung one cost the bootstrap (issue 44)."""
from __future__ import annotations

import time
from contextlib import ExitStack

import kafka.errors as Errors
import pytest

from kafka_eos import control_plane_bootstrap
from kafka_eos.broker_outcomes import from_kafka_python
from kafka_eos.control_plane_client import ControlPlaneClient
from kafka_eos.kafka_clients import BrokersUnreachable, is_transient
from tests.factories import hung_listener, refused_port

TRY_S = 1.0  # the first try of each broker (5 s in production): the tests wait less


@pytest.fixture(autouse=True)
def short_tries(monkeypatch):
    monkeypatch.setattr(control_plane_bootstrap, "BOOTSTRAP_TRY_S", TRY_S)




def test_no_broker_answering_is_one_error_naming_each_broker_and_what_it_did():
    with ExitStack() as stack:
        hung, refused = hung_listener(stack), refused_port()
        began = time.monotonic()
        with pytest.raises(BrokersUnreachable) as unreachable:
            ControlPlaneClient(bootstrap_servers=f"{hung},{refused}", bootstrap_timeout_ms=3_000,
                               request_timeout_ms=10_000)
        waited = time.monotonic() - began
    message = str(unreachable.value)
    assert waited < 3 + TRY_S, f"the bootstrap took {waited:.1f} s, over its 3 s deadline"
    assert f"bootstrap.servers={hung},{refused}" in message
    assert f"{hung} accepted no request within" in message and f"{refused} refused the connection" in message
    assert "Traceback" not in message and is_transient(unreachable.value)


def test_every_listed_broker_is_tried_in_one_deadline_whatever_the_random_start():
    """Five hung brokers listed: each is tried within the first round (5 x the first try)."""
    with ExitStack() as stack:
        hung = [hung_listener(stack) for _ in range(5)]
        with pytest.raises(BrokersUnreachable) as unreachable:
            ControlPlaneClient(bootstrap_servers=",".join(hung), bootstrap_timeout_ms=int(5.5 * TRY_S * 1000),
                               request_timeout_ms=10_000)
    assert set(unreachable.value.outcomes) == set(hung)


@pytest.mark.parametrize("exc,said", [
    (Errors.RequestTimedOutError("Request timed out after 5000 ms"), "accepted no request within 5 s"),
    (Errors.KafkaConnectionError("111 ECONNREFUSED Connection refused"), "refused the connection"),
    (Errors.KafkaConnectionError("Handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED]"), "TLS handshake failed"),
    (Errors.SaslAuthenticationFailedError("Authentication failed for user etl"), "refused the login"),
    (ValueError("odd"), "failed: ValueError: odd"),
])
def test_a_brokers_failure_is_said_in_words_an_operator_acts_on(exc, said):
    assert said in from_kafka_python(exc, 5.0)


def test_the_bootstrap_it_replaces_is_kafka_pythons_own():
    """kafka-python's private bootstrap coroutine is what the fail-over overrides: an upgrade that
    renames it or changes its signature must fail here, not silently restore the random pick."""
    import inspect

    from kafka.net.manager import KafkaConnectionManager

    from kafka_eos.control_plane_bootstrap import FailoverConnectionManager
    ours, theirs = FailoverConnectionManager._do_bootstrap, KafkaConnectionManager._do_bootstrap
    assert inspect.iscoroutinefunction(theirs) and ours is not theirs
    assert list(inspect.signature(theirs).parameters) == list(inspect.signature(ours).parameters) == ["self", "deadline"]
    for used in ("get_connection", "reset_backoff", "_conns", "_auth_failures", "_bootstrap_wakeup"):
        assert hasattr(KafkaConnectionManager, used) or used in inspect.getsource(KafkaConnectionManager.__init__), used
