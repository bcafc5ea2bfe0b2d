"""librdkafka settings -> the driver's control-plane (kafka-python) settings: carried or refused."""
from __future__ import annotations

import ssl

import pytest

from kafka_eos import KafkaEosError
from kafka_eos.connectors.dev.tls import generate
from kafka_eos.oauth_tokens import ClientCredentialsTokens
from kafka_eos.txn.client_settings import ClientSettingsError, kafka_python_settings
from kafka_eos.txn.control_plane import control_plane

BOOT = {"bootstrap.servers": "127.0.0.1:9093"}
SCRAM = {**BOOT, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
         "sasl.username": "etl", "sasl.password": "s3cret-Pw"}


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("tls"), "keystore-pw")


def test_plaintext_carries_bootstrap_and_client_id_and_ignores_tuning():
    settings = kafka_python_settings({**BOOT, "client.id": "orders", "linger.ms": "5", "acks": "all",
                                      "partitioner": "murmur2_random", "group.id": "g"})
    assert settings == {"bootstrap_servers": "127.0.0.1:9093", "security_protocol": "PLAINTEXT",
                        "client_id": "orders"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "scram-sha-512"])
def test_sasl_mechanisms_and_credentials_are_carried(mechanism):
    conf = {**SCRAM, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism}
    del conf["sasl.mechanism"]
    settings = kafka_python_settings(conf)
    assert (settings["sasl_mechanism"], settings["sasl_plain_username"], settings["sasl_plain_password"]) == \
        (mechanism.upper(), "etl", "s3cret-Pw")
    assert "ssl_context" not in settings


def test_sasl_ssl_with_a_ca_file_verifies_the_host_name_by_default(tls):
    settings = kafka_python_settings({**SCRAM, "ssl.ca.location": str(tls.ca_file)})
    context = settings["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname and settings["ssl_check_hostname"] and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [((("organizationName", "kafka-eos dev"),),
                                                               (("commonName", "kafka-eos dev CA"),))]


def test_endpoint_identification_none_turns_the_host_name_check_off(tls):
    conf = {**SCRAM, "ssl.ca.location": str(tls.ca_file), "ssl.endpoint.identification.algorithm": "none"}
    settings = kafka_python_settings(conf)
    assert not settings["ssl_context"].check_hostname and settings["ssl_check_hostname"] is False
    assert settings["ssl_context"].verify_mode == ssl.CERT_REQUIRED, "the certificate is still verified"


def test_certificate_verification_off_is_carried(tls):
    context = kafka_python_settings({**SCRAM, "enable.ssl.certificate.verification": "false"})["ssl_context"]
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname


def test_inline_ca_pem_is_loaded_in_memory_not_from_a_file(tls, tmp_path, monkeypatch):
    pem = tls.ca_file.read_text()
    monkeypatch.chdir(tmp_path)
    context = kafka_python_settings({**SCRAM, "ssl.ca.pem": pem})["ssl_context"]
    assert len(context.get_ca_certs()) == 1
    assert list(tmp_path.iterdir()) == [], "nothing written to disk"


def test_mutual_tls_certificate_and_key_are_loaded(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    files = generate(tmp_path, "pw")
    key, cert, _ = pkcs12.load_key_and_certificates(files.keystore.read_bytes(), b"pw")
    (tmp_path / "client.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "client.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"kpw")))
    conf = {**BOOT, "security.protocol": "SSL", "ssl.ca.location": str(files.ca_file),
            "ssl.certificate.location": str(tmp_path / "client.pem"), "ssl.key.location": str(tmp_path / "client.key"),
            "ssl.key.password": "kpw"}
    assert kafka_python_settings(conf)["security_protocol"] == "SSL"
    with pytest.raises(ssl.SSLError):
        kafka_python_settings({**conf, "ssl.key.password": "wrong"})


@pytest.mark.parametrize("key, value, fix", [
    ("sasl.mechanism", "GSSAPI", "built without libsasl2"),
    ("sasl.mechanism", "OAUTHBEARER", "needs a token source"),
    ("sasl.oauthbearer.grant.type", "urn:ietf:params:oauth:grant-type:jwt-bearer",
     "remove sasl.oauthbearer.grant.type"),
    ("sasl.kerberos.keytab", "/etc/k.keytab", "remove sasl.kerberos.keytab"),
    ("ssl.key.pem", "-----BEGIN PRIVATE KEY-----", "set ssl.key.location"),
    ("ssl.certificate.pem", "-----BEGIN CERTIFICATE-----", "set ssl.certificate.location"),
    ("ssl.keystore.location", "/k.p12", "point it at the client's PKCS12 keystore"),
    ("ssl.keystore.type", "JKS", "-srcstoretype JKS -deststoretype PKCS12"),
    ("ssl.truststore.location", "/t.jks", "set ssl.ca.location=ca.pem"),
    ("sasl.jaas.config", "org...ScramLoginModule required;", "set sasl.username and sasl.password"),
    ("security.protocol", "SASL_TLS", "use one of"),
    ("ssl.endpoint.identification.algorithm", "dns", "use https"),
    ("enable.ssl.certificate.verification", "maybe", "use true or false"),
])
def test_security_settings_it_cannot_carry_are_refused_naming_the_key_and_the_fix(key, value, fix):
    with pytest.raises(ClientSettingsError) as refused:
        kafka_python_settings({**SCRAM, key: value})
    assert f"client setting {key}=" in str(refused.value) and fix in str(refused.value)
    assert isinstance(refused.value, KafkaEosError)


def test_oauthbearer_with_oidc_carries_a_client_credentials_token_provider():
    conf = {**BOOT, "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": "etl-app", "sasl.oauthbearer.client.secret": "cs-1",
            "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token", "sasl.oauthbearer.scope": "kafka"}
    settings = kafka_python_settings(conf)
    provider = settings["sasl_oauth_token_provider"]
    assert settings["sasl_mechanism"] == "OAUTHBEARER" and isinstance(provider, ClientCredentialsTokens)
    assert (provider.endpoint, provider.client_id, provider.scope) == ("https://idp.example/token", "etl-app", "kafka")


def test_a_refused_secret_is_never_shown():
    with pytest.raises(ClientSettingsError) as refused:
        kafka_python_settings({**SCRAM, "ssl.key.pem": "PRIVATE-KEY-MATERIAL"})
    assert "PRIVATE-KEY-MATERIAL" not in str(refused.value) and "ssl.key.pem=***" in str(refused.value)


def test_sasl_without_a_mechanism_is_refused_not_left_to_a_default():
    conf = {k: v for k, v in SCRAM.items() if k != "sasl.mechanism"}
    with pytest.raises(ClientSettingsError, match="set sasl.mechanism"):
        kafka_python_settings(conf)


def test_conflicting_mechanisms_are_refused():
    with pytest.raises(ClientSettingsError, match="set only sasl.mechanism"):
        kafka_python_settings({**SCRAM, "sasl.mechanisms": "PLAIN"})


def test_a_missing_ca_file_is_refused(tmp_path):
    with pytest.raises(ClientSettingsError, match="no such file"):
        kafka_python_settings({**SCRAM, "ssl.ca.location": str(tmp_path / "nope.pem")})


def test_the_control_plane_getter_refuses_before_connecting():
    with pytest.raises(ClientSettingsError, match="sasl.mechanism"):
        control_plane({**SCRAM, "sasl.mechanism": "GSSAPI"})
