"""Session fixtures: one real Kafka broker and one real SparkSession for the whole suite."""
from __future__ import annotations

import os
import tempfile

import pytest

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
