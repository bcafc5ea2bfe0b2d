"""The metrics endpoint over HTTPS with basic auth (a real TLS handshake on 127.0.0.1, a CA made
here), and the rule that keeps a scrape's password off the network in clear text."""
from __future__ import annotations

import base64
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kafka_eos.connectors.dev.tls import generate
from kafka_eos.connectors.operate.metrics import PrometheusMetrics, serve
from tests.factories import load, problems, valid


def pem_pair(directory: Path) -> tuple[Path, Path, Path]:
    """(CA file, server certificate, server key) as PEM: the dev broker's, whose SAN is 127.0.0.1."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    files = generate(directory, "changeit")
    key, cert, _ = pkcs12.load_key_and_certificates(files.keystore.read_bytes(), b"changeit")
    cert_file, key_file = directory / "server.pem", directory / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return files.ca_file, cert_file, key_file


def get(url: str, ca: Path | None = None, user_info: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if user_info:
        request.add_header("Authorization", "Basic " + base64.b64encode(user_info.encode()).decode())
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_https_with_basic_auth_answers_only_the_right_credentials(tmp_path):
    ca, cert, key = pem_pair(tmp_path)
    metrics = PrometheusMetrics("p", 0, "127.0.0.1", "prometheus:s3cret", str(cert), str(key))
    url = f"https://127.0.0.1:{metrics.port}/metrics"
    try:
        status, body = get(url, ca, "prometheus:s3cret")
        assert status == 200 and 'kafka_eos_last_committed_batch{pipeline="p"} -1.0' in body
        assert get(url, ca)[0] == 401
        assert get(url, ca, "prometheus:wrong")[0] == 401
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            get(f"http://127.0.0.1:{metrics.port}/metrics", None, "prometheus:s3cret")  # no TLS: refused
    finally:
        metrics.close()


def test_the_file_turns_on_tls_and_auth_and_the_password_is_a_secret(tmp_path):
    ca, cert, key = pem_pair(tmp_path)
    data = valid(tmp_path)
    data["guarantee"] = "at_least_once"   # no operator probe (it would ask the file's brokers)
    data["metrics"] = {"host": "0.0.0.0", "tls_cert_file": str(cert), "tls_key_file": str(key),
                       "basic_auth_user_info": "${METRICS_USER_INFO}"}
    env = {"METRICS_USER_INFO": "prometheus:s3cret"}
    assert problems(tmp_path, data, env=env) == []
    cfg, _ = load(tmp_path, data, env)
    assert "prometheus:s3cret" in [s.reveal() for s in cfg.secrets()]
    assert "s3cret" not in repr(cfg.metrics)
    lines: list[str] = []
    metrics = serve(cfg, 0, lines.append)   # as `--metrics-port 0` would: any free port
    try:
        assert lines == [f"kafka-eos t: metrics at https://0.0.0.0:{metrics.port}/metrics"]
        assert get(f"https://127.0.0.1:{metrics.port}/metrics", ca, "prometheus:s3cret")[0] == 200
    finally:
        metrics.close()


@pytest.mark.parametrize("metrics, key, says", [
    ({"host": "0.0.0.0", "basic_auth_user_info": "u:p"}, "metrics.basic_auth_user_info", "clear text"),
    ({"basic_auth_user_info": "no-colon"}, "metrics.basic_auth_user_info", "is not user:password"),
    ({"tls_cert_file": "CERT"}, "metrics.tls_key_file", "both the certificate and its private key"),
    ({"tls_cert_file": "/nonexistent.pem", "tls_key_file": "KEY"}, "metrics.tls_cert_file", "cannot be read"),
])
def test_unsafe_or_incomplete_endpoint_security_is_refused(tmp_path, metrics, key, says):
    _, cert, private = pem_pair(tmp_path)
    data = valid(tmp_path)
    data["metrics"] = {k: {"CERT": str(cert), "KEY": str(private)}.get(v, v) for k, v in metrics.items()}
    found = problems(tmp_path, data)
    assert [p for p in found if p.path == key and says in p.message], found


def test_basic_auth_on_loopback_without_tls_is_allowed(tmp_path):
    data = valid(tmp_path)
    data["metrics"] = {"basic_auth_user_info": "u:p"}
    assert problems(tmp_path, data) == []
