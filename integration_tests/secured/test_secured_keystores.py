"""Client keystores and truststores on the SASL_SSL cluster: a PKCS12 keystore and a PKCS12
truststore (what a Spark ``kafka`` source user has, made with ``keytool``; no ``ssl.ca.location``)
run exactly once against a broker that requires client certificates (mutual TLS: the same settings
without the keystore are refused in the TLS handshake); a JKS keystore or truststore and every
other setting the run could not use fail ``validate`` (exit 1, the key and the fix named) and are
refused by ``run`` before any transaction is opened."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from integration_tests.kafka_tools import assert_exactly_once
from integration_tests.pipeline_cli import kafka_eos, progress_lines
from integration_tests.secured_cluster import (ETL_PASSWORD, check_exactly_once_as_admin, mtls_broker, secured_broker,
                                               secured_pipeline, seed_orders)
from kafka_eos.txn.cluster.acl_checks import PROBE_SUFFIX
from kafka_eos.txn.cluster.control_plane import control_plane

__all__ = ["mtls_broker", "secured_broker"]
KEYSTORE_PASSWORD = "keystore-Pw-5c1"
TRUSTSTORE_PASSWORD = "truststore-Pw-8d4"
ORDERS = 2000


def keytool_keystore(directory: Path, store_type: str) -> Path:
    """A client key pair and self-signed certificate in a new ``store_type`` keystore (keytool)."""
    path = directory / f"client.{'p12' if store_type == 'PKCS12' else 'jks'}"
    subprocess.run(["keytool", "-genkeypair", "-alias", "etl", "-keyalg", "EC", "-groupname", "secp256r1",
                    "-dname", "CN=etl,O=kafka-eos test", "-validity", "2", "-storetype", store_type,
                    "-keystore", str(path), "-storepass:env", "KS_PASSWORD", "-keypass:env", "KS_PASSWORD"],
                   env={**os.environ, "KS_PASSWORD": KEYSTORE_PASSWORD}, check=True, capture_output=True)
    return path


def keytool_signed_keystore(cluster, directory: Path) -> Path:
    """A keytool PKCS12 keystore whose certificate the cluster's CA signed, as a Java client's is made:
    -genkeypair, -certreq, the CA's -gencert (clientAuth), then the CA and the reply imported."""
    path = keytool_keystore(directory, "PKCS12")
    csr, reply = directory / "client.csr", directory / "client.crt"
    env = {**os.environ, "KS_PASSWORD": KEYSTORE_PASSWORD, "CA_PASSWORD": cluster.security.tls.keystore_password}
    store = ["-keystore", str(path), "-storepass:env", "KS_PASSWORD"]
    for args in (["-certreq", "-alias", "etl", "-file", str(csr), *store],
                 ["-gencert", "-keystore", str(cluster.security.tls.ca_keystore), "-storetype", "PKCS12",
                  "-alias", "ca", "-storepass:env", "CA_PASSWORD", "-infile", str(csr), "-outfile", str(reply),
                  "-validity", "2", "-ext", "EKU=clientAuth", "-rfc"],
                 ["-importcert", "-noprompt", "-alias", "kafka-ca", "-file", str(cluster.security.tls.ca_file),
                  *store],
                 ["-importcert", "-alias", "etl", "-file", str(reply), *store],
                 ["-delete", "-alias", "kafka-ca", *store]):  # the reply's chain holds the CA; no trusted entry
        subprocess.run(["keytool", *args], env=env, check=True, capture_output=True)
    return path


def tls_refusals(conf: dict[str, str]) -> list[str]:
    """librdkafka's log lines of an AdminClient with ``conf`` whose metadata request fails."""
    lines: list[str] = []
    logger = logging.getLogger(f"mtls-probe-{uuid.uuid4().hex}")
    logger.propagate = False
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    admin = AdminClient({**conf, "logger": logger, "log_level": 3})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=10)
    admin.poll(1)  # serves the queued log lines
    return lines


def handshake_failures(cluster) -> int:
    """How many connections the broker refused in the TLS handshake so far (its log)."""
    return cluster.nodes[0].log.read_text(errors="replace").count("(SSL handshake failed)")


def keytool_truststore(cluster, directory: Path, store_type: str) -> Path:
    """The secured broker's CA certificate as the one trusted entry of a new ``store_type`` truststore
    (keytool -importcert, as a Java client's truststore is made)."""
    path = directory / f"truststore.{'p12' if store_type == 'PKCS12' else 'jks'}"
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "kafka-ca", "-file",
                    str(cluster.security.tls.ca_file), "-storetype", store_type, "-keystore", str(path),
                    "-storepass:env", "TS_PASSWORD"],
                   env={**os.environ, "TS_PASSWORD": TRUSTSTORE_PASSWORD}, check=True, capture_output=True)
    return path


def java_trust(cluster, directory: Path, store_type: str) -> dict[str, str | None]:
    """A keytool truststore in place of the PEM CA file (``None`` removes ``ssl.ca.location``)."""
    return {"ssl.ca.location": None, "ssl.truststore.location": str(keytool_truststore(cluster, directory, store_type)),
            "ssl.truststore.password": "${TRUSTSTORE_PASSWORD}"}


def with_properties(path: Path, properties: dict[str, str | None]) -> None:
    """The pipeline file with ``properties`` set in both clusters' settings (``None``: removed)."""
    doc = yaml.safe_load(path.read_text())
    for side in ("source", "sink"):
        settings = doc[side]["kafka"]["properties"]
        settings.update(properties)
        for key in [k for k, v in properties.items() if v is None]:
            settings.pop(key)
    path.write_text(yaml.safe_dump(doc))


def cli(cluster, command: str, path: Path, tmp_path: Path, *args: str):
    env = {"KAFKA_USERNAME": "etl", "KAFKA_PASSWORD": ETL_PASSWORD, "KEYSTORE_PASSWORD": KEYSTORE_PASSWORD,
           "TRUSTSTORE_PASSWORD": TRUSTSTORE_PASSWORD}
    return kafka_eos([command, str(path), *args], cluster.bootstrap, tmp_path / "checkpoints", timeout=900, env=env)


def transactional_ids(cluster, prefix: str) -> dict[str, str]:
    """Every transactional id under ``prefix`` the cluster knows, with its state (as admin)."""
    listings = control_plane(cluster.admin_conf()).list_transactions()
    return {t.transactional_id: t.transaction_state for rows in listings.values() for t in rows
            if t.transactional_id.startswith(prefix)}


@pytest.mark.chaos  # `make chaos`: make test keeps the refusals (validate, no run) and secured runs elsewhere
def test_a_pkcs12_keystore_and_truststore_from_keytool_run_exactly_once(mtls_broker, tmp_path):
    path, names = secured_pipeline(mtls_broker, tmp_path)
    with_properties(path, java_trust(mtls_broker, tmp_path, "PKCS12"))
    assert "ssl.ca.location" not in path.read_text(), "the brokers' CA is trusted through the truststore only"
    seed_orders(mtls_broker, names["input"], "p12", ORDERS)
    # the broker requires a client certificate signed by its CA: the same settings without a keystore, or
    # with a self-signed one, fail the TLS handshake (the broker logs it), and validate names that (exit 3:
    # a refused login)
    without_keystore = {k: v for k, v in mtls_broker.client_conf("etl").items() if not k.startswith("ssl.keystore")}
    (tmp_path / "self-signed").mkdir()
    self_signed = {"ssl.keystore.location": str(keytool_keystore(tmp_path / "self-signed", "PKCS12")),
                   "ssl.keystore.password": KEYSTORE_PASSWORD}
    for conf in (without_keystore, {**without_keystore, **self_signed}):
        before = handshake_failures(mtls_broker)
        refusals = tls_refusals(conf)
        assert any("SSL" in line and "alert" in line for line in refusals), refusals
        assert handshake_failures(mtls_broker) > before, mtls_broker.log_tail()
    before = handshake_failures(mtls_broker)
    refused = cli(mtls_broker, "validate", path, tmp_path)
    assert refused.code == 3 and "the TLS handshake with the brokers failed" in refused.stderr, refused.log()
    assert "ssl.keystore.location" in refused.stderr and "cannot reach Kafka" not in refused.stderr, refused.log()
    assert handshake_failures(mtls_broker) > before, "validate was refused in the TLS handshake"
    keystore = keytool_signed_keystore(mtls_broker, tmp_path)
    with_properties(path, {"ssl.keystore.location": str(keystore), "ssl.keystore.password": "${KEYSTORE_PASSWORD}"})
    validate = cli(mtls_broker, "validate", path, tmp_path)
    assert validate.code == 0, validate.log()
    run = cli(mtls_broker, "run", path, tmp_path, "--once")
    assert run.code == 0, run.log()
    assert progress_lines(run, "orders-json"), run.stdout
    assert_exactly_once(check_exactly_once_as_admin(mtls_broker, names["output"],
                                                    expected={f"p12-{i}" for i in range(ORDERS)},
                                                    id_of=lambda m: json.loads(m.value())["order_id"]))
    output = refused.stdout + refused.stderr + validate.stdout + validate.stderr + run.stdout + run.stderr
    assert KEYSTORE_PASSWORD not in output and ETL_PASSWORD not in output and TRUSTSTORE_PASSWORD not in output


REFUSED = {  # (cluster, directory) -> properties; the key named, a piece of the fix
    "jks keystore": (lambda c, d: {"ssl.keystore.location": str(keytool_keystore(d, "JKS")),
                                "ssl.keystore.password": "${KEYSTORE_PASSWORD}"},
                     "ssl.keystore.location", "keytool -importkeystore -srckeystore"),
    "wrong keystore password": (lambda c, d: {"ssl.keystore.location": str(keytool_keystore(d, "PKCS12")),
                                           "ssl.keystore.password": "not-the-keystore-Pw"},
                                "ssl.keystore.location", "set the keystore's password in ssl.keystore.password"),
    "jks truststore": (lambda c, d: java_trust(c, d, "JKS"),
                       "ssl.truststore.location", "-deststoretype PKCS12, then set ssl.truststore.location="),
    "inline private key": (lambda c, d: {"ssl.key.pem": "-----BEGIN PRIVATE KEY-----"},
                           "ssl.key.pem", "put the private key in a file readable only by its owner"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_setting_the_run_cannot_use_fails_validate_and_opens_no_transaction(secured_broker, tmp_path, case):
    make, key, fix = REFUSED[case]
    path, names = secured_pipeline(secured_broker, tmp_path)
    with_properties(path, make(secured_broker, tmp_path))
    seed_orders(secured_broker, names["input"], "refused", 50)
    validate = cli(secured_broker, "validate", path, tmp_path)
    assert validate.code == 1, validate.log()
    assert f'sink.kafka.properties["{key}"]' in validate.stderr and fix in validate.stderr, validate.log()
    run = cli(secured_broker, "run", path, tmp_path, "--once")
    assert run.code == 1 and "nothing was started" in run.stderr and fix in run.stderr, run.log()
    assert not (tmp_path / "checkpoints").exists() or not any((tmp_path / "checkpoints").rglob("commits/*"))
    opened = transactional_ids(secured_broker, names["prefix"])
    assert set(opened) <= {names["prefix"] + PROBE_SUFFIX}, f"a transaction was opened: {opened}"
    assert "not-the-keystore-Pw" not in validate.stderr + run.stderr
