"""Session fixtures: one real Kafka broker and one real SparkSession for the whole suite.

Transaction leaks: every test that uses the session broker must end with no transaction left
Ongoing that it opened (``no_transaction_leak``, after Flink's ``checkProducerLeak``): an open
transaction holds back read_committed readers of its partitions until transaction.timeout.ms,
which is what the sink's abort and release steps exist to prevent. A test that leaves one open
on purpose says so with ``@pytest.mark.leaves_open("why")``.
"""
from __future__ import annotations

import os
import tempfile
import time

import pytest

from integration_tests.fast_jvms import fast_test_jvms
from integration_tests.kafka_tools import ongoing_transactions
from integration_tests.providers import broker_from_environment
from kafka_eos.config.spark_option import TEST_HOOKS_ENV


def pytest_configure(config):
    """The suite keeps the state of the dev brokers and registries it starts (``kafka-eos dev ...
    up``) in a directory of its own, inherited by every subprocess: a test never finds, reuses or
    stops the developer's own dev broker or registry. It also allows the sink's test hooks
    (``faultInjection``: refused unless this variable is 1), for the session's SparkSession and
    every job, CLI run and Spark cluster the tests start (all inherit the environment)."""
    os.environ["KAFKA_EOS_STATE_DIR"] = tempfile.mkdtemp(prefix="kafka-eos-test-state-")
    os.environ[TEST_HOOKS_ENV] = "1"
    fast_test_jvms(os.environ)
    config.addinivalue_line("markers", "leaves_open(reason): the test may end with a transaction of its own "
                                       "still Ongoing on the session broker (the leak check is skipped)")


@pytest.fixture(scope="session")
def broker():
    with broker_from_environment() as b:
        yield b


@pytest.fixture(scope="session")
def bootstrap(broker) -> str:
    return broker.bootstrap


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failed integration test, print the tail of the broker log next to the failure."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "broker" in item.fixturenames:
        b = item.funcargs.get("broker")
        if b is not None:
            report.sections.append(("kafka broker log", b.log_tail()))


@pytest.fixture(scope="session")
def spark():
    from kafka_eos.connectors.spark_harness import local_session
    session = local_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def schema_registry():
    """One real schema registry for the session (see providers.registry_from_environment)."""
    from integration_tests.providers import registry_from_environment
    with registry_from_environment() as registry:
        yield registry


@pytest.fixture(scope="session")
def iptables():
    """iptables and ss (installed if missing) for the network-fault tests; rules and cgroups that
    an interrupted earlier session left are removed first."""
    from integration_tests import network_faults as faults
    try:
        faults.ensure_iptables()
    except faults.NetworkFaultUnavailable as exc:
        pytest.skip(str(exc))
    faults.remove_stale_rules()
    yield


# A query that just stopped may still be ending its transactions (the sink's release step runs
# as the query terminates): a leak is what is still Ongoing after this grace.
LEAK_GRACE_S = 20.0


@pytest.fixture(autouse=True)
def no_transaction_leak(request):
    """Fail a test (at teardown) that leaves a transaction it opened Ongoing on the session broker,
    naming the transactional ids. "Opened by the test" is every id Ongoing after the test (and its
    other fixtures' teardown) that was not Ongoing before it: prefixes are ``unique(...)`` per test,
    so a test's ids are new ones. Tests that do not use the session broker are not checked (their
    own clusters are gone when they end); ``@pytest.mark.leaves_open("why")`` opts a test out."""
    if "broker" not in request.fixturenames or request.node.get_closest_marker("leaves_open"):
        yield
        return
    bootstrap = request.getfixturevalue("broker").bootstrap
    before = ongoing_transactions(bootstrap)
    yield
    deadline = time.monotonic() + LEAK_GRACE_S
    leaked = ongoing_transactions(bootstrap) - before
    while leaked and time.monotonic() < deadline:
        time.sleep(1.0)
        leaked = ongoing_transactions(bootstrap) - before
    if leaked:
        pytest.fail(f"{request.node.nodeid} left {len(leaked)} transaction(s) Ongoing on the session broker: "
                    f"{', '.join(sorted(leaked))}. They hold back read_committed readers of their partitions until "
                    "transaction.timeout.ms. End them in the test (stop the query so the sink releases them, or "
                    "abort them), or mark the test @pytest.mark.leaves_open(\"why\").", pytrace=False)
