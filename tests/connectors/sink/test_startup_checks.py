"""Sink start checks that need no cluster."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.errors import SinkConfigError


def test_speculation_is_refused_with_the_setting_named():
    from kafka_eos.connectors.sink.startup_checks import check_speculation
    check_speculation(None)
    check_speculation("false")
    with pytest.raises(SinkConfigError, match="spark.speculation=false"):
        check_speculation("true")


def test_a_silent_broker_is_named_asked_again_later_and_the_others_not_again(caplog):
    """One broker of three hung at the start: the start goes on (it stopped the query before), the
    broker is named, and it is asked again at a later writer's start, no sooner than RECHECK_S."""
    import logging

    from kafka_eos.connectors.sink import startup_checks
    from kafka_eos.txn.cluster.broker_support import BrokerCheck
    from kafka_eos.txn.protocol.sink_config import SinkConfig
    config = SinkConfig(producer_conf={"bootstrap.servers": "silent-test:1"}, transactional_id_prefix="p",
                        log_location="/unused")
    asked, clock = [], [1000.0]
    answers = [BrokerCheck(frozenset({1, 3}), frozenset({2})), BrokerCheck(frozenset({2}), frozenset())]

    def ask(conf, timeout_s, skip):
        asked.append(set(skip))
        return answers[len(asked) - 1]
    check = lambda: startup_checks.check_brokers(config, now=lambda: clock[0], ask=ask)  # noqa: E731
    with caplog.at_level(logging.WARNING):
        check()
    assert "broker(s) 2 did not answer" in caplog.text and asked == [set()]
    clock[0] += startup_checks.RECHECK_S - 1
    check()
    assert len(asked) == 1, "asked again before RECHECK_S"
    clock[0] += 1
    check()
    assert asked == [set(), {1, 3}], "the second check asks only the broker that was silent"
    clock[0] += 10 * startup_checks.RECHECK_S
    check()
    assert len(asked) == 2, "every broker answered: the check is done for this process"


def test_a_check_with_every_broker_answering_is_asked_once():
    from kafka_eos.connectors.sink import startup_checks
    from kafka_eos.txn.cluster.broker_support import BrokerCheck
    from kafka_eos.txn.protocol.sink_config import SinkConfig
    config = SinkConfig(producer_conf={"bootstrap.servers": "all-answer-test:1"}, transactional_id_prefix="p",
                        log_location="/unused")
    asked = []

    def ask(conf, timeout_s, skip):
        asked.append(1)
        return BrokerCheck(frozenset({1, 2, 3}), frozenset())
    for _ in range(3):
        startup_checks.check_brokers(config, ask=ask)
    assert asked == [1]
