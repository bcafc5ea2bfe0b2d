"""The secured local broker's client-certificate setting (no JVM runs here): the server.properties
entries it gives, the client keystore the dev clients present, and the CA keystore kept for signing."""
from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID

from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster, Node
from kafka_eos.connectors.dev.security import ClusterSecurity


def server_properties(tmp_path, **settings) -> tuple[LocalKafkaCluster, dict[str, str]]:
    cluster = LocalKafkaCluster(ClusterSettings(workdir=tmp_path, security="sasl_ssl", **settings))
    cluster.nodes = [Node(1, 9092, 9093, tmp_path / "node-1")]
    lines = cluster._properties(cluster.nodes[0]).splitlines()
    return cluster, dict(line.split("=", 1) for line in lines)


def test_the_default_secured_broker_asks_for_no_client_certificate(tmp_path):
    cluster, props = server_properties(tmp_path)
    assert props["ssl.client.auth"] == props["listener.name.sasl_ssl.ssl.client.auth"] == "none"
    conf = cluster.client_conf("etl")
    assert "ssl.keystore.location" not in conf and "ssl.keystore.password" not in conf
    assert cluster.security.tls.ca_keystore is None and not (tmp_path / "security" / "tls" / "ca.p12").exists()


def test_required_client_auth_trusts_the_generated_ca_and_the_dev_clients_present_a_keystore(tmp_path):
    cluster, props = server_properties(tmp_path, client_auth="required")
    tls = cluster.security.tls
    assert props["ssl.client.auth"] == "required"
    assert props["listener.name.sasl_ssl.ssl.client.auth"] == "required", "a SASL_SSL listener reads only its own"
    assert (props["ssl.truststore.type"], props["ssl.truststore.location"]) == ("PEM", str(tls.ca_file))
    assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"
    for user in ("etl", "admin"):
        conf = cluster.client_conf(user)
        assert conf["ssl.keystore.location"] == str(tls.client_keystore)
        assert conf["ssl.keystore.password"] == tls.keystore_password
        assert conf["sasl.username"] == user, "the principal stays the SASL user"
    assert cluster.security.redacted_conf()["ssl.keystore.password"] == "***"


def test_the_client_certificate_is_signed_by_the_ca_the_broker_trusts(tmp_path):
    tls = ClusterSecurity.create(tmp_path, client_auth="required").tls
    ca = x509.load_pem_x509_certificate(tls.ca_file.read_bytes())
    client = pkcs12.load_pkcs12(tls.client_keystore.read_bytes(), tls.keystore_password.encode())
    cert = client.cert.certificate
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    signer = pkcs12.load_pkcs12(tls.ca_keystore.read_bytes(), tls.keystore_password.encode())
    assert signer.cert.certificate == ca and signer.cert.friendly_name == b"ca"
    assert isinstance(signer.key, ec.EllipticCurvePrivateKey)
    assert signer.key.public_key().public_numbers() == ca.public_key().public_numbers()
    for path in (tls.client_keystore, tls.ca_keystore):
        assert path.stat().st_mode & 0o777 == 0o600


def test_an_unknown_mode_and_client_auth_without_tls_are_refused(tmp_path):
    with pytest.raises(ValueError, match="client_auth='requested': use one of none, required"):
        ClusterSecurity.create(tmp_path, client_auth="requested")
    with pytest.raises(BrokerEnvironmentError, match="client_auth='required' needs security='sasl_ssl'"):
        ClusterSettings(client_auth="required")
