"""librdkafka settings -> the driver's control-plane (kafka-python) settings: carried or refused."""
from __future__ import annotations

import ssl

import pytest

from kafka_eos import KafkaEosError
from kafka_eos.connectors.dev.tls import generate
from kafka_eos.oauth_tokens import ClientCredentialsTokens
from kafka_eos.txn.cluster.client_settings import ClientSettingsError, kafka_python_settings
from kafka_eos.txn.cluster.control_plane import control_plane

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
    ("ssl.truststore.location", "/t.jks", "point it at the PKCS12 or PEM truststore"),
    ("ssl.truststore.certificates", "-----BEGIN CERTIFICATE-----", "set ssl.ca.pem"),
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


TRUST_PW = "trust-Pw-3a9"


@pytest.fixture
def truststore(tls, tmp_path):
    """A PKCS12 truststore with the CA as a certificate-only entry (as keytool -importcert writes)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12
    ca = x509.load_pem_x509_certificate(tls.ca_file.read_bytes())
    path = tmp_path / "truststore.p12"
    path.write_bytes(pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(ca, b"ca")],
                                                      BestAvailableEncryption(TRUST_PW.encode())))
    return {**SCRAM, "ssl.truststore.location": str(path), "ssl.truststore.password": TRUST_PW}


def test_a_truststore_is_trusted_by_the_control_plane_in_memory(truststore, tls, tmp_path, monkeypatch):
    from kafka_eos.txn.cluster.client_settings import check_client_settings
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    before = set(tmp_path.iterdir())
    check_client_settings(truststore)
    context = kafka_python_settings(truststore)["ssl_context"]
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("organizationName", "kafka-eos dev"),), (("commonName", "kafka-eos dev CA"),))], "the CA, and only it"
    assert context.check_hostname and set(tmp_path.iterdir()) == before, "no file written"


def _jks(path):
    path.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 32)
    return str(path)


@pytest.mark.parametrize("change, key, fix", [
    (lambda c, d: {"ssl.truststore.location": _jks(d / "t.jks")}, "ssl.truststore.location",
     "-srcstoretype JKS -destkeystore {d}/t.p12 -deststoretype PKCS12, then set ssl.truststore.location={d}/t.p12"),
    (lambda c, d: {"ssl.truststore.password": "Not-The-Trust-Pw"}, "ssl.truststore.location",
     "set the truststore's password in ssl.truststore.password"),
    (lambda c, d: {"ssl.truststore.location": str(d / "missing.p12")}, "ssl.truststore.location",
     "point it at the PKCS12 or PEM truststore"),
    (lambda c, d: {"ssl.truststore.location": str(d / "empty.pem"), "ssl.truststore.password": None},
     "ssl.truststore.location", "import the CA's certificate: keytool -importcert"),
    (lambda c, d: {"ssl.ca.location": "/etc/ca.pem"}, "ssl.truststore.location",
     "keep one: the truststore, or ssl.ca.location"),
    (lambda c, d: {"ssl.ca.pem": "-----BEGIN CERTIFICATE-----"}, "ssl.truststore.location",
     "keep one: the truststore, or ssl.ca.pem"),
])
@pytest.mark.parametrize("control_plane", [True, False])
def test_an_unusable_truststore_is_refused_by_the_one_rule(truststore, tmp_path, change, key, fix, control_plane):
    from kafka_eos.txn.cluster.client_settings import check_client_settings
    (tmp_path / "empty.pem").write_text("-----BEGIN NOTHING-----\n-----END NOTHING-----\n")
    conf = {k: v for k, v in {**truststore, **change(truststore, tmp_path)}.items() if v is not None}
    with pytest.raises(ClientSettingsError) as refused:
        check_client_settings(conf, control_plane)
    assert refused.value.key == key and fix.format(d=tmp_path) in refused.value.fix
    assert f"client setting {key}=" in str(refused.value) and fix.format(d=tmp_path) in str(refused.value)
    assert TRUST_PW not in str(refused.value) and "Not-The-Trust-Pw" not in str(refused.value)
