"""TLS material for the local secured broker, generated at start with ``cryptography``.

Invariants:
- One CA per cluster; its certificate (PEM) is what clients trust (``ssl.ca.location``).
- The broker certificate is signed by that CA and its SAN covers ``127.0.0.1`` and ``localhost``,
  so clients keep hostname verification on (librdkafka's ``ssl.endpoint.identification.algorithm=https``).
- The broker key and certificate go into a password-protected PKCS12 keystore; every file is
  written readable by its owner only (0600).
- A client keystore (``client.p12``, same password) holds a client certificate signed by the CA
  (``clientAuth``), what the dev tooling's own clients present to a broker that requires client
  certificates (``ssl.client.auth=required``).
- With ``signing=True`` the CA's key and certificate are kept in ``ca.p12`` (same password) so a
  client's certificate request can be signed (``keytool -gencert -keystore ca.p12 -alias ca``);
  without it the CA key lives only in memory while the files are made.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 30


@dataclass(frozen=True)
class TlsFiles:
    ca_file: Path
    keystore: Path
    keystore_password: str
    client_keystore: Path | None = None  # client.p12: a client certificate signed by the CA
    ca_keystore: Path | None = None      # ca.p12: the CA's key, for signing client certificates


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file only its owner can read (0600 from creation, no window)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafka-eos dev"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: str, issuer: str, public_key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS)))


def _ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder("kafka-eos dev CA", "kafka-eos dev CA", key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def _broker_cert(ca_key, ca_cert: x509.Certificate) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                       x509.DNSName("localhost")])
    cert = (_builder("localhost", "kafka-eos dev CA", key.public_key())
            .add_extension(san, critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def _client_cert(ca_key, ca_cert: x509.Certificate) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder("kafka-eos dev client", "kafka-eos dev CA", key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def generate(directory: Path, keystore_password: str, signing: bool = False) -> TlsFiles:
    """A CA (``ca.pem``), a broker keystore (``broker.p12``) and a client keystore (``client.p12``)
    signed by it, in ``directory``; with ``signing`` also the CA's own keystore (``ca.p12``)."""
    ca_key, ca_cert = _ca()
    ca_file = directory / "ca.pem"
    write_private(ca_file, ca_cert.public_bytes(serialization.Encoding.PEM))
    encryption = serialization.BestAvailableEncryption(keystore_password.encode())
    stores = {}
    for name, (key, cert) in (("broker", _broker_cert(ca_key, ca_cert)), ("client", _client_cert(ca_key, ca_cert))):
        stores[name] = directory / f"{name}.p12"
        write_private(stores[name], pkcs12.serialize_key_and_certificates(name.encode(), key, cert, [ca_cert],
                                                                          encryption))
    ca_keystore = None
    if signing:
        ca_keystore = directory / "ca.p12"
        write_private(ca_keystore, pkcs12.serialize_key_and_certificates(b"ca", ca_key, ca_cert, None, encryption))
    return TlsFiles(ca_file, stores["broker"], keystore_password, stores["client"], ca_keystore)
