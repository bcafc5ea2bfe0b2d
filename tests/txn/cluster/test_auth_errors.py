"""A refused SASL login is named as such (user and mechanism, never the password), not as a
network fault; the admin client's error callback is where librdkafka reports it."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos.txn.cluster import broker_configs
from kafka_eos.txn.cluster.auth_errors import AuthWatch, failure

CONF = {"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "scram-sha-512",
        "sasl.username": "etl", "sasl.password": "Pw-Never-Shown-7"}
SASL_ERROR = KafkaError(KafkaError._AUTHENTICATION, "sasl_ssl://b:9093/bootstrap: SASL authentication error: "
                        "Authentication failed during authentication due to invalid credentials with SASL "
                        "mechanism SCRAM-SHA-512")


def test_the_watch_keeps_authentication_errors_only():
    watch = AuthWatch()
    watch(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))
    assert watch.last is None
    watch(SASL_ERROR)
    assert watch.last is not None and "invalid credentials" in watch.last


def test_the_failure_names_user_and_mechanism_never_the_password():
    text, fix = failure(CONF, "SASL authentication error")
    assert "user 'etl'" in text and "SASL mechanism SCRAM-SHA-512" in text and "Pw-Never-Shown-7" not in text
    assert "--entity-name etl" in fix and "Pw-Never-Shown-7" not in fix


class Admin:
    """The metadata call fails like librdkafka's on a refused login; the callback fires on poll."""

    def __init__(self, watch, conf, error=SASL_ERROR):
        self.watch, self.error = watch, error
        broker_configs.WATCHES[self] = (watch, conf)  # as admin_client registers a real one

    def list_topics(self, timeout):
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata: Broker transport failure"))

    def poll(self, timeout):
        if self.error is not None:
            self.watch(self.error)


def test_a_refused_login_is_an_authentication_failure_not_unreachable():
    with pytest.raises(broker_configs.AuthenticationFailed) as failed:
        broker_configs.broker_ids(Admin(AuthWatch(), CONF), 0.1)
    assert "authentication failed for user 'etl'" in failed.value.detail and "kafka-configs" in failed.value.fix


def test_a_transport_failure_without_an_authentication_error_stays_unreachable():
    with pytest.raises(broker_configs.ClusterUnreachable, match="transport failure"):
        broker_configs.broker_ids(Admin(AuthWatch(), CONF, error=None), 0.1)


def test_behind_names_a_refused_login_from_the_exception_or_the_callback():
    watch = AuthWatch()
    transport = KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))
    assert watch.behind(object(), transport) is None  # a fake client without poll: nothing queued
    bare = KafkaException(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: bare"))
    assert watch.behind(object(), bare) == "SASL authentication error: bare"
    client = Admin(watch, CONF)
    assert "invalid credentials" in (watch.behind(client, transport) or ""), "served by polling the client"
    watch.reset(object())
    assert watch.last is None


NO_CLIENT_CERT = KafkaError(KafkaError._TRANSPORT, "sasl_ssl://b:9093/bootstrap: Receive failed: error:0A000412:SSL "
                            "routines::ssl/tls alert bad certificate: SSL alert number 42 (after 5ms in state "
                            "SSL_HANDSHAKE)")
UNTRUSTED_BROKER = KafkaError(KafkaError._SSL, "sasl_ssl://b:9093/bootstrap: SSL handshake failed: error:0A000086:"
                              "SSL routines::certificate verify failed: broker certificate could not be verified")


def test_a_refused_tls_handshake_is_kept_an_ordinary_transport_failure_is_not():
    # what librdkafka 2.16 reported against a broker with ssl.client.auth=required (measured): the
    # client without a certificate gets the broker's alert as _TRANSPORT, an untrusted broker _SSL
    for error in (NO_CLIENT_CERT, UNTRUSTED_BROKER):
        watch = AuthWatch()
        watch(KafkaError(KafkaError._TRANSPORT, "sasl_ssl://b:9093/bootstrap: Connection refused"))
        assert watch.last is None
        watch(error)
        assert watch.last == error.str()


def test_a_tls_failure_names_the_side_and_the_settings_that_fix_it():
    text, fix = failure(CONF, NO_CLIENT_CERT.str())
    assert text.startswith("the TLS handshake with the brokers failed") and "bad certificate" in text
    assert "ssl.keystore.location" in fix and "ssl.client.auth=required" in fix
    text, fix = failure(CONF, UNTRUSTED_BROKER.str())
    assert "certificate verify failed" in text and "ssl.ca.location" in fix and "ssl.truststore.location" in fix
    assert "Pw-Never-Shown-7" not in text + fix
