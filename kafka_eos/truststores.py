"""Truststores (``ssl.truststore.location`` / ``.password`` / ``.type``, the Java clients' names)
read as the PEM CA certificates librdkafka and Python's ``ssl`` trust; and what a Java KeyStore is.

Invariants:
- librdkafka has no truststore setting: ``librdkafka_settings`` replaces the three keys with
  ``ssl.ca.pem`` (the truststore's certificates as PEM text), and ``kafka_eos.client_factory``
  calls it for every librdkafka client; the driver's control plane trusts the same ``ca_pem``
  in memory (``txn.client_settings.ssl_context``, ``cadata``). Nothing is written to a file.
- A truststore is PKCS12 (what ``keytool -importcert -storetype PKCS12`` writes: certificate-only
  entries under the store password; the certificates trusted are those that belong to no
  private key) or PEM (Java's ``ssl.truststore.type=PEM``: a file of PEM certificates, no
  password). The file's content decides; ``ssl.truststore.type``, if set, is PKCS12, PEM or JKS
  (Java's default name, under which Java reads PKCS12 files too).
- ``check`` is what every caller runs before a client is built (``txn.client_settings
  .check_client_settings``, the one rule): refused, as ``StoreProblem`` (key, problem, fix) that
  never shows a password, are a Java KeyStore (JKS or JCEKS: with the ``keytool`` command that
  converts it), a missing file, a PKCS12 file that does not open with ``ssl.truststore.password``,
  a truststore without a certificate, a truststore set together with ``ssl.ca.location`` or
  ``ssl.ca.pem`` (two sources of trust), a password or type without a location. A client built
  with such settings raises the same ``StoreProblem``.
- ``java_kind`` and ``convert_command`` are the one test for a Java KeyStore and the one command
  that converts it, for keystores (``txn.keystores``) and truststores alike.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

from kafka_eos import KafkaEosError

LOCATION, PASSWORD, TYPE = "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type"
KEYS = {LOCATION, PASSWORD, TYPE}
TYPES = {"PKCS12", "PEM", "JKS"}
CA_KEYS = ("ssl.ca.location", "ssl.ca.pem")
_JAVA_MAGIC = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}
# Java-only settings with the setting that replaces them
FIXES = {"ssl.truststore.certificates": "set ssl.ca.pem to the same PEM certificates"}


@dataclass(frozen=True)
class StoreProblem(KafkaEosError, ValueError):
    """A keystore or truststore setting that cannot be used: the key, what is wrong, and the fix (a
    ``ValueError``, like librdkafka's refusal of a setting when a client is built)."""
    key: str
    problem: str
    fix: str

    def __str__(self) -> str:
        return f"{self.key}: {self.problem}; fix: {self.fix}"


def java_kind(data: bytes) -> str | None:
    """"JKS" or "JCEKS" for a Java KeyStore's bytes, else None."""
    return _JAVA_MAGIC.get(data[:4])


def convert_command(location: str, key: str, kind: str = "JKS") -> str:
    """The one command that turns the Java ``kind`` store at ``location`` into PKCS12, and the setting
    to use then."""
    target = str(Path(location).with_suffix(".p12"))
    return (f"keytool -importkeystore -srckeystore {location} -srcstoretype {kind} -destkeystore {target} "
            f"-deststoretype PKCS12, then set {key}={target}")


def _certificates(data: bytes, password: str | None, location: str) -> list[x509.Certificate]:
    if data.lstrip().startswith(b"-----BEGIN"):
        if password:
            raise StoreProblem(PASSWORD, f"{location} is a PEM truststore, which has no password",
                               "remove ssl.truststore.password")
        try:
            return x509.load_pem_x509_certificates(data)
        except ValueError:
            return []
    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise StoreProblem(LOCATION, f"{location} does not open with ssl.truststore.password (a wrong password, "
                                     "or not a PKCS12 or PEM file)",
                           "set the truststore's password in ssl.truststore.password") from None
    return [c.certificate for c in store.additional_certs]


@functools.lru_cache(maxsize=16)
def _read(location: str, password: str | None, stamp: tuple[int, int]) -> str:
    """The PEM text of the truststore's certificates (``stamp``: the file's mtime and size, so a
    replaced file is read again)."""
    data = Path(location).read_bytes()
    kind = java_kind(data)
    if kind:
        raise StoreProblem(LOCATION, f"{location} is a Java {kind} truststore; kafka-eos reads PKCS12 or PEM "
                                     "truststores only", f"convert it: {convert_command(location, LOCATION, kind)}")
    certificates = _certificates(data, password, location)
    if not certificates:
        raise StoreProblem(LOCATION, f"{location} holds no trusted certificate",
                           "import the CA's certificate: keytool -importcert -alias ca -file ca.pem -keystore "
                           f"{location} -storetype PKCS12")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certificates)


def ca_pem(conf: Mapping[str, Any]) -> str:
    """The truststore's certificates as PEM text; ``StoreProblem`` for one no client can use."""
    check_settings(conf)
    location = str(conf[LOCATION])
    path = Path(location)
    if not path.is_file():
        raise StoreProblem(LOCATION, f"{location}: no such file", "point it at the PKCS12 or PEM truststore "
                                                                  "holding the brokers' CA certificate")
    stat = path.stat()
    password = conf.get(PASSWORD)
    return _read(location, None if password is None else str(password), (stat.st_mtime_ns, stat.st_size))


def check_settings(conf: Mapping[str, Any]) -> None:
    """The truststore keys' combination (files not read)."""
    if LOCATION not in conf:
        for key in (PASSWORD, TYPE):
            if key in conf:
                raise StoreProblem(key, "set without ssl.truststore.location",
                                   f"set ssl.truststore.location, or remove {key}")
        return
    both = [k for k in CA_KEYS if k in conf]
    if both:
        raise StoreProblem(LOCATION, f"set together with {both[0]} (two sources of trusted certificates)",
                           f"keep one: the truststore, or {both[0]}")
    kind = str(conf.get(TYPE, "PKCS12")).strip().upper()
    if kind not in TYPES:
        raise StoreProblem(TYPE, f"type {kind} is not read", "use a PKCS12 or PEM truststore "
                                                             "(ssl.truststore.type=PKCS12 or PEM)")


def check(conf: Mapping[str, Any]) -> None:
    """Raise ``StoreProblem`` for truststore settings no client can use (none set: fine)."""
    if LOCATION in conf:
        ca_pem(conf)  # checks the settings, then reads the file
    else:
        check_settings(conf)


def librdkafka_settings(conf: Mapping[str, Any]) -> Mapping[str, Any]:
    """``conf`` with a truststore given as ``ssl.ca.pem`` (unchanged without truststore keys)."""
    if not KEYS & set(conf):
        return conf
    return {**{k: v for k, v in conf.items() if k not in KEYS}, "ssl.ca.pem": ca_pem(conf)}
