"""PKCS12 client keystores: accepted by the one rule and loaded in memory by the control plane; JKS
and unusable keystores refused naming the key and the fix."""
from __future__ import annotations

import os

import pytest
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

from kafka_eos.connectors.dev.tls import generate
from kafka_eos.txn.cluster.client_settings import ClientSettingsError, check_client_settings, kafka_python_settings

SCRAM = {"bootstrap.servers": "127.0.0.1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
         "sasl.username": "etl", "sasl.password": "s3cret-Pw"}


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("tls"), "keystore-Pw-1")


def keystore_conf(tls, password: str | None = None) -> dict[str, str]:
    return {**SCRAM, "ssl.ca.location": str(tls.ca_file), "ssl.keystore.location": str(tls.keystore),
            "ssl.keystore.password": tls.keystore_password if password is None else password}


def refusal(conf, control_plane: bool = True) -> ClientSettingsError:
    with pytest.raises(ClientSettingsError) as refused:
        check_client_settings(conf, control_plane)
    return refused.value


def test_a_pkcs12_keystore_is_carried_to_the_control_plane_in_memory(tls, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    conf = keystore_conf(tls)
    check_client_settings(conf)
    context = kafka_python_settings(conf)["ssl_context"]
    assert context.get_ca_certs(), "the CA is still trusted"
    assert list(tmp_path.iterdir()) == [], "no key material written to disk"


def test_the_keystore_is_what_the_context_presents(tls, monkeypatch):
    loaded = []
    import ssl
    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain",
                        lambda self, certfile, keyfile=None, password=None: loaded.append(open(certfile, "rb").read()))
    kafka_python_settings(keystore_conf(tls))
    assert len(loaded) == 1 and b"ENCRYPTED PRIVATE KEY" in loaded[0] and b"BEGIN CERTIFICATE" in loaded[0]
    assert tls.keystore_password.encode() not in loaded[0]


def test_a_jks_keystore_is_refused_with_the_keytool_command(tls, tmp_path):
    jks = tmp_path / "client.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + os.urandom(64))
    refused = refusal({**keystore_conf(tls), "ssl.keystore.location": str(jks)})
    assert refused.key == "ssl.keystore.location"
    assert "Java JKS keystore" in str(refused)
    assert (f"keytool -importkeystore -srckeystore {jks} -srcstoretype JKS -destkeystore {tmp_path / 'client.p12'} "
            f"-deststoretype PKCS12") in refused.fix
    assert tls.keystore_password not in str(refused)


def test_the_source_side_refuses_a_jks_keystore_too(tls, tmp_path):
    jks = tmp_path / "client.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + os.urandom(64))
    conf = {"bootstrap.servers": "b:9092", "ssl.keystore.location": str(jks)}
    assert "keytool" in refusal(conf, control_plane=False).fix


def test_a_wrong_keystore_password_is_refused_without_showing_it(tls):
    refused = refusal(keystore_conf(tls, password="not-the-Pw-42"))
    assert refused.key == "ssl.keystore.location" and "does not open with ssl.keystore.password" in str(refused)
    assert "not-the-Pw-42" not in str(refused)


def test_a_keystore_without_a_key_is_refused(tls, tmp_path):
    key, cert, _ = pkcs12.load_key_and_certificates(tls.keystore.read_bytes(), tls.keystore_password.encode())
    only_cert = tmp_path / "only-cert.p12"
    only_cert.write_bytes(pkcs12.serialize_key_and_certificates(b"c", None, None, [cert], BestAvailableEncryption(b"pw")))
    refused = refusal({**keystore_conf(tls, "pw"), "ssl.keystore.location": str(only_cert)})
    assert "holds no private key" in str(refused)


@pytest.mark.parametrize("extra, key, fix", [
    ({"ssl.certificate.location": "/c.pem"}, "ssl.keystore.location", "keep one"),
    ({"ssl.keystore.location": None}, "ssl.keystore.password", "set ssl.keystore.location"),
])
def test_contradictory_keystore_settings_are_refused(tls, extra, key, fix):
    conf = {k: v for k, v in {**keystore_conf(tls), **extra}.items() if v is not None}
    refused = refusal(conf)
    assert (refused.key, fix in refused.fix) == (key, True)


def test_the_source_side_accepts_what_only_the_control_plane_refuses():
    conf = {**SCRAM, "ssl.key.pem": "-----BEGIN PRIVATE KEY-----"}
    check_client_settings(conf, control_plane=False)
    assert refusal(conf).key == "ssl.key.pem"
