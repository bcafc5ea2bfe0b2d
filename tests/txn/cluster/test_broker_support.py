"""The supported-broker rule: Kafka 3.7+ offering EndTxn, DescribeTransactions, ListTransactions."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from kafka.protocol.api_key import ApiKey

from kafka_eos.txn.cluster.broker_support import UnsupportedBrokerError, check_brokers, unsupported

TXN_APIS = {int(ApiKey.EndTxn): (0, 4), int(ApiKey.DescribeTransactions): (0, 0),
            int(ApiKey.ListTransactions): (0, 1)}


@pytest.mark.parametrize("version", [(3, 7), (3, 9), (4, 0), (4, 2)])
def test_the_proven_brokers_are_accepted(version):
    assert unsupported("1", version, TXN_APIS) is None


def test_an_older_broker_is_refused_naming_its_version_and_the_fix():
    reason = unsupported("2", (3, 6), TXN_APIS)
    assert reason is not None
    assert "Kafka broker 2 is Kafka 3.6" in reason and "upgrade the cluster to 3.7 or later" in reason


def test_a_broker_without_the_transaction_requests_is_refused_naming_them():
    reason = unsupported("1", (2, 8), {int(ApiKey.EndTxn): (0, 2)})
    assert reason is not None
    assert "does not offer DescribeTransactions" in reason and "ListTransactions" in reason
    assert "EndTxn" not in reason.split("does not offer")[1]


class FakeControlPlane:
    def __init__(self, brokers):
        self.brokers = brokers

    def get_broker_version_data(self, broker):
        version, apis = self.brokers[broker]
        return SimpleNamespace(broker_version=version, api_versions=apis)


class FakeAdmin:
    def __init__(self, ids):
        self.ids = ids

    def list_topics(self, timeout):
        return SimpleNamespace(brokers={i: object() for i in self.ids})


def test_every_live_broker_is_asked_and_an_old_one_left_by_a_rolling_upgrade_is_refused():
    brokers = {1: ((4, 2), TXN_APIS), 2: ((3, 5), TXN_APIS), 3: ((3, 9), TXN_APIS)}
    with pytest.raises(UnsupportedBrokerError, match="Kafka broker 2 is Kafka 3.5") as refused:
        check_brokers({}, 1.0, lambda conf: FakeControlPlane(brokers), lambda conf: FakeAdmin([3, 1, 2]))
    assert "broker 1 " not in str(refused.value) and "broker 3 " not in str(refused.value)
    check_brokers({}, 1.0, lambda conf: FakeControlPlane({1: brokers[1]}), lambda conf: FakeAdmin([1]))


class HungBroker(FakeControlPlane):
    def __init__(self, brokers, hung):
        super().__init__(brokers)
        self.hung = hung

    def get_broker_version_data(self, broker):
        import kafka.errors as Errors
        if broker in self.hung:
            raise Errors.KafkaTimeoutError(f"node {broker}: no answer within 5 s")
        return super().get_broker_version_data(broker)


def test_a_broker_that_does_not_answer_is_returned_silent_not_raised():
    """Issue 44: a hung broker's ApiVersions timed out and stopped the query's start."""
    brokers = {1: ((4, 2), TXN_APIS), 2: ((4, 2), TXN_APIS), 3: ((4, 2), TXN_APIS)}
    seen = check_brokers({}, 1.0, lambda conf: HungBroker(brokers, {2}), lambda conf: FakeAdmin([1, 2, 3]))
    assert seen.supported == {1, 3} and seen.silent == {2}
    again = check_brokers({}, 1.0, lambda conf: HungBroker(brokers, set()), lambda conf: FakeAdmin([1, 2, 3]),
                          skip=seen.supported)
    assert again.supported == {2} and again.silent == frozenset()


def test_an_old_broker_is_refused_even_while_another_is_silent():
    brokers = {1: ((3, 5), TXN_APIS), 2: ((4, 2), TXN_APIS)}
    with pytest.raises(UnsupportedBrokerError, match="Kafka broker 1 is Kafka 3.5"):
        check_brokers({}, 1.0, lambda conf: HungBroker(brokers, {2}), lambda conf: FakeAdmin([1, 2]))


def test_a_failure_other_than_silence_is_raised():
    import kafka.errors as Errors

    class Refusing(FakeControlPlane):
        def get_broker_version_data(self, broker):
            raise Errors.SaslAuthenticationFailedError("bad password")
    with pytest.raises(Errors.SaslAuthenticationFailedError):
        check_brokers({}, 1.0, lambda conf: Refusing({}), lambda conf: FakeAdmin([1]))
