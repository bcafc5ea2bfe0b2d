"""Client keystores (``ssl.keystore.location`` / ``ssl.keystore.password``): PKCS12 accepted, JKS refused.

Invariants:
- librdkafka reads a PKCS12 keystore itself; the driver's control plane (kafka-python on Python's
  ``ssl``) cannot, so ``load_into`` opens it with ``cryptography`` and hands its key and
  certificates to the in-memory ``ssl.SSLContext`` through an anonymous memory file (Linux
  ``memfd``; elsewhere a file created 0600 in a private directory and removed at once), the key
  re-encrypted with a one-time password. No key material is written to a readable file.
- ``check`` is what every caller runs before any client is built (the one rule,
  ``txn.client_settings.check_client_settings``): the file exists, is not a Java KeyStore (JKS or
  JCEKS: refused with the ``keytool`` command that converts it), opens with its password and
  holds a private key and a certificate. Problems are ``kafka_eos.truststores.StoreProblem`` (key,
  problem, fix; what a Java KeyStore is and the command that converts it are that module's too);
  the password never appears in them.
- ``ssl.keystore.type`` (Java-only) is refused: librdkafka reads the keystore as PKCS12 (``FIXES``).
  Truststores (``ssl.truststore.*``) are ``kafka_eos.truststores``.
"""
from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from pathlib import Path
from typing import Mapping

from cryptography.hazmat.primitives.serialization import (BestAvailableEncryption, Encoding, PrivateFormat,
                                                          pkcs12)

from kafka_eos.truststores import StoreProblem, convert_command, java_kind

LOCATION, PASSWORD = "ssl.keystore.location", "ssl.keystore.password"
KEYS = {LOCATION, PASSWORD}
FIXES = {
    "ssl.keystore.type": "remove it: librdkafka reads ssl.keystore.location as PKCS12 (convert a JKS keystore "
                         "with keytool -importkeystore -srcstoretype JKS -deststoretype PKCS12)",
}


def _open(location: str, password: str | None) -> pkcs12.PKCS12KeyAndCertificates:
    path = Path(location)
    if not path.is_file():
        raise StoreProblem(LOCATION, f"{location}: no such file", "point it at the client's PKCS12 keystore")
    data = path.read_bytes()
    kind = java_kind(data)
    if kind:
        raise StoreProblem(LOCATION, f"{location} is a Java {kind} keystore; librdkafka and the transaction "
                                     "control plane read PKCS12 only",
                           f"convert it: {convert_command(location, LOCATION, kind)}")
    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise StoreProblem(LOCATION, f"{location} does not open with ssl.keystore.password (a wrong password, "
                                     "or not a PKCS12 file)", "set the keystore's password in "
                                     "ssl.keystore.password") from None
    if store.key is None or store.cert is None:
        raise StoreProblem(LOCATION, f"{location} holds no private key with its certificate",
                           "export the client's key and certificate into it (keytool -genkeypair, or "
                           "openssl pkcs12 -export -inkey key.pem -in cert.pem)")
    return store


def check(conf: Mapping[str, str]) -> None:
    """Raise ``StoreProblem`` for a keystore setting no client can use (nothing set: fine)."""
    if PASSWORD in conf and LOCATION not in conf:
        raise StoreProblem(PASSWORD, "a keystore password without ssl.keystore.location",
                           "set ssl.keystore.location, or remove ssl.keystore.password")
    if LOCATION in conf:
        if "ssl.certificate.location" in conf:
            raise StoreProblem(LOCATION, "set together with ssl.certificate.location (two client certificates)",
                               "keep one: the PKCS12 keystore, or the PEM certificate and key")
        _open(conf[LOCATION], conf.get(PASSWORD))


def _pem(store: pkcs12.PKCS12KeyAndCertificates, one_time: bytes) -> bytes:
    assert store.key is not None and store.cert is not None  # _open refuses a keystore without them
    key = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_time))
    chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    return key + b"".join(c.public_bytes(Encoding.PEM) for c in chain)


def _load_from_memory(context: ssl.SSLContext, pem: bytes, one_time: bytes) -> None:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kafka-eos-keystore", os.MFD_CLOEXEC)
        try:
            os.write(fd, pem)
            context.load_cert_chain(f"/proc/self/fd/{fd}", password=one_time)
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="kafka-eos-") as private:  # 0700
        path = Path(private) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        context.load_cert_chain(str(path), password=one_time)


def load_into(context: ssl.SSLContext, conf: Mapping[str, str]) -> None:
    """Present the keystore's key and certificate chain from ``context`` (``check`` refuses first)."""
    check(conf)
    store = _open(conf[LOCATION], conf.get(PASSWORD))
    one_time = secrets.token_urlsafe(24).encode()
    _load_from_memory(context, _pem(store, one_time), one_time)
