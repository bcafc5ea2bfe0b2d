"""Truststores read as the PEM certificates librdkafka (``ssl.ca.pem``) and the control plane
trust: PKCS12 (Java's certificate-only entries) and PEM accepted; a JKS store, a wrong password, a
missing file, a store without a certificate and two sources of trust refused, naming the key and the
fix, never the password."""
from __future__ import annotations

import os

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

from kafka_eos import KafkaEosError
from kafka_eos.connectors.dev.tls import generate
from kafka_eos.truststores import StoreProblem, ca_pem, check, convert_command, librdkafka_settings

PASSWORD = "trust-Pw-7e1"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("tls"), "keystore-Pw-1")


@pytest.fixture
def ca(tls) -> x509.Certificate:
    return x509.load_pem_x509_certificate(tls.ca_file.read_bytes())


def java_truststore(path, ca: x509.Certificate, password: str = PASSWORD):
    """What ``keytool -importcert -storetype PKCS12`` writes: one trusted certificate entry."""
    path.write_bytes(pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(ca, b"ca")],
                                                      BestAvailableEncryption(password.encode())))
    return path


def conf_of(path, password: str | None = PASSWORD, **extra: str) -> dict[str, str]:
    conf = {"bootstrap.servers": "b:9093", "security.protocol": "SSL", "ssl.truststore.location": str(path), **extra}
    return conf if password is None else {**conf, "ssl.truststore.password": password}


def refused(conf) -> StoreProblem:
    with pytest.raises(StoreProblem) as problem:
        check(conf)
    assert isinstance(problem.value, KafkaEosError) and isinstance(problem.value, ValueError)
    assert PASSWORD not in str(problem.value)
    return problem.value


def test_a_pkcs12_truststore_becomes_librdkafkas_ssl_ca_pem(tmp_path, tls, ca):
    conf = conf_of(java_truststore(tmp_path / "trust.p12", ca), **{"ssl.truststore.type": "PKCS12"})
    check(conf)
    settings = librdkafka_settings(conf)
    assert settings == {"bootstrap.servers": "b:9093", "security.protocol": "SSL",
                        "ssl.ca.pem": tls.ca_file.read_text()}
    assert x509.load_pem_x509_certificates(settings["ssl.ca.pem"].encode()) == [ca]


def test_a_pem_truststore_is_read_as_its_certificates(tls):
    assert ca_pem(conf_of(tls.ca_file, None, **{"ssl.truststore.type": "PEM"})) == tls.ca_file.read_text()


def test_settings_without_a_truststore_are_left_as_they_are():
    conf = {"bootstrap.servers": "b:1", "ssl.ca.location": "/ca.pem"}
    assert librdkafka_settings(conf) is conf
    check(conf)


def test_a_jks_truststore_is_refused_with_the_keytool_command(tmp_path):
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + os.urandom(64))
    problem = refused(conf_of(jks))
    assert problem.key == "ssl.truststore.location" and "Java JKS truststore" in problem.problem
    assert problem.fix == f"convert it: {convert_command(str(jks), 'ssl.truststore.location')}"
    assert (f"keytool -importkeystore -srckeystore {jks} -srcstoretype JKS -destkeystore {tmp_path}/truststore.p12 "
            f"-deststoretype PKCS12, then set ssl.truststore.location={tmp_path}/truststore.p12") in problem.fix


def test_a_wrong_password_is_refused_without_showing_either(tmp_path, ca):
    path = java_truststore(tmp_path / "trust.p12", ca)
    problem = refused(conf_of(path, "not-the-Trust-Pw"))
    assert problem.key == "ssl.truststore.location" and "does not open with ssl.truststore.password" in problem.problem
    assert "set the truststore's password" in problem.fix and "not-the-Trust-Pw" not in str(problem)
    assert "does not open" in refused(conf_of(path, None)).problem


def test_a_jceks_truststore_is_refused_with_its_own_store_type(tmp_path):
    jceks = tmp_path / "truststore.jceks"
    jceks.write_bytes(b"\xce\xce\xce\xce" + os.urandom(64))
    assert "-srckeystore " + str(jceks) + " -srcstoretype JCEKS -destkeystore" in refused(conf_of(jceks)).fix


def test_a_missing_file_is_refused(tmp_path):
    problem = refused(conf_of(tmp_path / "nowhere.p12"))
    assert (problem.key, "no such file" in problem.problem, "PKCS12 or PEM truststore" in problem.fix) == \
        ("ssl.truststore.location", True, True)


def test_a_truststore_without_a_certificate_is_refused(tmp_path, tls):
    key, cert, _ = pkcs12.load_key_and_certificates(tls.keystore.read_bytes(), tls.keystore_password.encode())
    only_key = tmp_path / "only-key.p12"  # the key's own certificate is no trust anchor (as in Java)
    only_key.write_bytes(pkcs12.serialize_key_and_certificates(b"k", key, cert, None, BestAvailableEncryption(b"pw")))
    empty_pem = tmp_path / "empty.pem"
    empty_pem.write_bytes(b"-----BEGIN NOTHING-----\n-----END NOTHING-----\n")
    for conf in (conf_of(only_key, "pw"), conf_of(empty_pem, None)):
        problem = refused(conf)
        assert "holds no trusted certificate" in problem.problem and "keytool -importcert" in problem.fix


@pytest.mark.parametrize("extra, key, fix", [
    ({"ssl.ca.location": "/ca.pem"}, "ssl.truststore.location", "keep one: the truststore, or ssl.ca.location"),
    ({"ssl.ca.pem": "-----BEGIN CERTIFICATE-----"}, "ssl.truststore.location", "keep one"),
    ({"ssl.truststore.type": "JCEKS"}, "ssl.truststore.type", "PKCS12 or PEM"),
])
def test_contradictory_settings_are_refused(tmp_path, ca, extra, key, fix):
    problem = refused(conf_of(java_truststore(tmp_path / "trust.p12", ca), **extra))
    assert problem.key == key and fix in problem.fix


@pytest.mark.parametrize("key", ["ssl.truststore.password", "ssl.truststore.type"])
def test_a_password_or_type_without_a_location_is_refused(key):
    problem = refused({"bootstrap.servers": "b:1", key: PASSWORD})
    assert problem.key == key and "set ssl.truststore.location" in problem.fix


def test_a_pem_truststore_with_a_password_is_refused(tls):
    assert refused(conf_of(tls.ca_file)).key == "ssl.truststore.password"


def test_a_replaced_truststore_is_read_again(tmp_path, ca):
    path = java_truststore(tmp_path / "trust.p12", ca)
    assert len(x509.load_pem_x509_certificates(ca_pem(conf_of(path)).encode())) == 1
    other = x509.load_pem_x509_certificate(generate(tmp_path / "other", "x").ca_file.read_bytes())
    path.write_bytes(pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(c, None) for c in (ca, other)],
                                                      BestAvailableEncryption(PASSWORD.encode())))
    assert len(x509.load_pem_x509_certificates(ca_pem(conf_of(path)).encode())) == 2
