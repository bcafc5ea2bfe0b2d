"""The transaction-leak check of conftest (``no_transaction_leak``) on the session broker: a test that
leaves a transaction Ongoing errors at teardown naming its id; a marked or clean test passes."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from confluent_kafka import Producer

from integration_tests.kafka_tools import create_topic, unique

pytest_plugins = ("pytester",)
ROOT = Path(__file__).resolve().parents[2]

INNER_CONFTEST = """
import os
from types import SimpleNamespace

import pytest

import integration_tests.conftest as suite
from integration_tests.conftest import no_transaction_leak  # noqa: F401 - the fixture under test

suite.LEAK_GRACE_S = 2.0


def pytest_configure(config):
    config.addinivalue_line("markers", "leaves_open(reason): see integration_tests/conftest.py")


@pytest.fixture(scope="session")
def broker():
    return SimpleNamespace(bootstrap=os.environ["LEAK_CHECK_BOOTSTRAP"])
"""

INNER_TESTS = """
import os

import pytest
from confluent_kafka import Producer


def open_transaction(broker, name):
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": os.environ["LEAK_CHECK_PREFIX"] + name})
    p.init_transactions()
    p.begin_transaction()
    p.produce(os.environ["LEAK_CHECK_TOPIC"], b"x")
    p.flush()
    return p


def test_leaves_one_open(broker):
    open_transaction(broker, "leaked")


@pytest.mark.leaves_open("the check's own test: left open on purpose")
def test_marked(broker):
    open_transaction(broker, "marked")


def test_clean(broker):
    open_transaction(broker, "clean").abort_transaction()
"""


def end_transaction(bootstrap: str, transactional_id: str) -> None:
    """Abort whatever ``transactional_id`` left open: a new producer of the id fences and aborts it."""
    Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id}).init_transactions(30)


def test_a_test_leaving_a_transaction_open_fails_naming_it(pytester, bootstrap):
    prefix, topic = unique("leakcheck") + "-", create_topic(bootstrap, unique("leakcheck"))
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TESTS)
    env = {"LEAK_CHECK_BOOTSTRAP": bootstrap, "LEAK_CHECK_PREFIX": prefix, "LEAK_CHECK_TOPIC": topic,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        for name in ("leaked", "marked"):
            end_transaction(bootstrap, prefix + name)
    result.assert_outcomes(passed=3, errors=1)
    out = result.stdout.str()
    assert f"test_leaves_one_open left 1 transaction(s) Ongoing on the session broker: {prefix}leaked" in out
    assert f"{prefix}marked" not in out and f"{prefix}clean" not in out, sys.executable
