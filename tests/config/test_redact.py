"""Secrets: never in repr/str, log lines, tracebacks or CLI output; intact where clients need them."""
from __future__ import annotations

import io
import logging
import pickle
import subprocess
import sys

from kafka_eos.config.model import Secret
from kafka_eos.config.redact import RedactingFilter, Redactor
from kafka_eos.connectors.cli import main
from tests.factories import load, valid, write


def test_secret_hides_its_value_in_every_text_form():
    secret = Secret("hunter2")
    assert repr(secret) == str(secret) == f"{secret}" == f"{secret:>10}" == "***"
    assert "hunter2" not in repr([secret]) and secret.reveal() == "hunter2"
    assert pickle.loads(pickle.dumps(secret)).reveal() == "hunter2"


def test_config_repr_and_client_conf(tmp_path):
    data = valid(tmp_path)
    data["sink"]["kafka"]["properties"] = {"sasl.password": "pw-123", "sasl.username": "alice"}
    data["source"]["schema"] = {"inline": data["source"]["schema"]["inline"],
                                "registry": {"url": "http://r:8081", "basic_auth_user_info": "u:sr-pass"}}
    cfg, _ = load(tmp_path, data)
    assert "pw-123" not in repr(cfg) and "sr-pass" not in repr(cfg)
    assert cfg.sink.kafka.client_conf()["sasl.password"] == "pw-123"
    assert cfg.sink.kafka.redacted()["sasl.password"] == "***"
    assert cfg.source.schema.registry.client_conf()["basic.auth.user.info"] == "u:sr-pass"


def test_redactor_hides_known_values_pairs_and_url_credentials():
    redact = Redactor([Secret("s3cr3t"), "tok-42"])
    line = ('connect with s3cr3t and tok-42; sasl.password=plain1 ssl.key.pem: "-----BEGIN" '
            'sasl.jaas.config=PlainLoginModule required username="u" password="p4ss"; '
            'registry https://user:pa55@registry:8081/subjects')
    out = redact(line)
    for leaked in ("s3cr3t", "tok-42", "plain1", "BEGIN", "p4ss", "pa55"):
        assert leaked not in out, (leaked, out)
    assert "https://user:***@registry:8081" in out and "connect with *** and ***" in out


def test_logging_filter_redacts_messages_arguments_and_tracebacks():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(Redactor(["hunter2"])))
    logger = logging.getLogger("kafka_eos.test_redact")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("login with %s", "hunter2")
        try:
            raise ValueError("bad password hunter2")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "hunter2" not in text and text.count("***") >= 2 and "ValueError" in text


def test_install_redacts_every_logger_of_the_process():
    code = ("import logging, sys; from kafka_eos.config.redact import install; install(['hunter2']);"
            "logging.basicConfig(stream=sys.stdout, level=logging.INFO);"
            "logging.getLogger('any.library').info('token %s', 'hunter2')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "hunter2" not in out and "token ***" in out


def test_cli_output_never_shows_secrets(tmp_path, capsys, monkeypatch):
    data = valid(tmp_path)
    data["source"]["max_offsets_per_trigger"] = "${KAFKA_PASSWORD}"   # a secret ends up in an error
    data["sink"]["kafka"]["properties"] = {"sasl.password": "pw-in-file"}
    path = write(tmp_path, "p.yaml", data)
    monkeypatch.setenv("KAFKA_PASSWORD", "hunter2-env")
    assert main(["validate", "--offline", str(path)]) == 1
    assert main(["describe", "--offline", str(path)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "source.max_offsets_per_trigger" in text and "must be a whole number" in text
    assert "hunter2-env" not in text and "pw-in-file" not in text and "***" in text
