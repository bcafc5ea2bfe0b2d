"""Every secret setting named by ``kafka_eos.secrets`` is hidden on every output path that needs no
broker: the config model, ``kafka-eos describe``, the text and log redactor, the source and sink
options, Spark's redaction settings and ``${VAR}`` interpolation. Parametrized over the one list
of keys, so a key (or marker) added there is tested here automatically."""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from kafka_eos.connectors.pipeline import describe
from kafka_eos.config.redact import Redactor
from kafka_eos.connectors.cli import main
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options
from kafka_eos.secrets import (KNOWN_SECRET_KEYS, PUBLIC_KEYS, SECRET_MARKERS, Secret, is_secret_env_var,
                               is_secret_key, redacted, spark_redaction_conf)
from kafka_eos.txn.protocol.errors import SinkConfigError
from tests.factories import ORDER_SCHEMA, load, valid, write

# every known setting, and one made-up setting per marker (``x.password``, ``x.ssl.key.pem``, ...)
SECRET_KEYS = sorted(set(KNOWN_SECRET_KEYS) | {f"x.{marker}" for marker in SECRET_MARKERS})
SOURCE_BASE = {"kafka.bootstrap.servers": "b:9092", "subscribe": "orders"}
SINK_BASE = {"kafka.bootstrap.servers": "b:9092", "transactional.id.prefix": "q1", "checkpointLocation": "/ck"}


def token(key: str, where: str = "") -> str:
    """The value that must never be shown: unique per key (and per place it is set)."""
    return "leak" + re.sub(r"\W", "", f"{where}{key}") + "Zq9"


def value(key: str, where: str = "") -> str:
    """The setting's value holding ``token``; a JAAS line the source can translate for the JAAS key."""
    if key.endswith("sasl.jaas.config"):
        return ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                f'username="svc-principal" password="{token(key, where)}";')
    return token(key, where)


def test_the_lists_agree():
    assert all(is_secret_key(k) and is_secret_key(f"kafka.{k}") for k in SECRET_KEYS)
    assert not [k for k in PUBLIC_KEYS if is_secret_key(k) or is_secret_key(f"kafka.{k}")]


# --- the config model and describe ------------------------------------------------------------

def _everywhere(tmp_path) -> dict:
    """A pipeline with every secret key set on both clusters (plain) and in both option maps
    (``kafka.`` form), the registry's basic auth on both schemas, and a secret ${VARIABLE}."""
    data = valid(tmp_path)
    for side in ("source", "sink"):
        data[side]["kafka"]["properties"] = {**{k: value(k, side) for k in SECRET_KEYS},
                                             "sasl.username": "svc-principal", "client.id": "${SOME_PASSWORD}"}
        data[side]["options"] = {f"kafka.{k}": value(k, f"{side}opt") for k in SECRET_KEYS}
        data[side]["format"] = "avro"
        data[side]["schema"] = {"inline": ORDER_SCHEMA, "registry": {
            "url": "http://registry:8081", "subject": "s", "basic_auth_user_info": token("registry", side)}}
    return data


ENV = {"SOME_PASSWORD": "leakSOMEPASSWORDZq9"}
EVERY_TOKEN = sorted({token(k, w) for k in SECRET_KEYS for w in ("source", "sink", "sourceopt", "sinkopt")}
                     | {token("registry", "source"), token("registry", "sink"), ENV["SOME_PASSWORD"]})


@pytest.fixture(scope="module")
def everywhere(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("secrets")
    cfg, _ = load(tmp_path, _everywhere(tmp_path), ENV)
    assert cfg is not None
    return cfg, tmp_path


def test_config_holds_every_secret_as_secret(everywhere):
    cfg, _ = everywhere
    revealed = {s.reveal() for s in cfg.secrets()}
    assert not [t for t in EVERY_TOKEN if not any(t in r for r in revealed)]
    assert cfg.source.kafka.client_conf()["sasl.password"] == value("sasl.password", "source")


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_config_repr_and_redacted_hide_the_key(everywhere, key):
    cfg, _ = everywhere
    for side, cluster in (("source", cfg.source.kafka), ("sink", cfg.sink.kafka)):
        for text in (repr(cfg), str(cfg), repr(cluster), str(cluster.redacted())):
            assert token(key, side) not in text and token(key, f"{side}opt") not in text
        assert cluster.redacted()[key] == "***" and cluster.redacted()["sasl.username"] == "svc-principal"
    assert token("registry", "source") not in repr(cfg)


@pytest.fixture(scope="module")
def described(everywhere):
    """``describe``'s plan (YAML, JSON) and ``kafka-eos describe --offline`` (YAML, JSON) output."""
    cfg, tmp_path = everywhere
    texts = [describe.render(cfg, {}), describe.render(cfg, {}, as_json=True)]
    path = write(tmp_path, "all-secrets.yaml", _everywhere(tmp_path))
    for extra in ([], ["--json"]):
        out, err = io.StringIO(), io.StringIO()
        with pytest.MonkeyPatch.context() as mp, redirect_stdout(out), redirect_stderr(err):
            mp.setenv("SOME_PASSWORD", ENV["SOME_PASSWORD"])
            main(["describe", "--offline", *extra, str(path)])
        texts.append(out.getvalue() + err.getvalue())
    return texts


def test_describe_prints_the_plan(described):
    for text in described:
        assert "svc-principal" in text and "***" in text and "kafka.sasl.password" in text


@pytest.mark.parametrize("secret", EVERY_TOKEN)
def test_describe_hides_every_secret(described, secret):
    assert not [i for i, text in enumerate(described) if secret in text]


# --- ${VAR} interpolation ---------------------------------------------------------------------

@pytest.mark.parametrize("key", SECRET_KEYS)
def test_variables_named_like_a_secret_key_are_secret(tmp_path, key):
    name = re.sub(r"\W", "_", key).upper()
    assert is_secret_env_var(name)
    data = valid(tmp_path)
    data["sink"]["kafka"]["properties"] = {"client.id": f"${{{name}}}"}
    cfg, _ = load(tmp_path, data, {name: "leakFromEnvZq9"})
    assert Secret("leakFromEnvZq9") in cfg.secrets()
    assert "leakFromEnvZq9" not in describe.render(cfg, {})


# --- the text redactor and the process's log records ----------------------------------------

def _lines(key: str) -> list[str]:
    t = token(key)
    return [f"{key}={t}", f"{key}: {t}", f'"{key}": "{t}"', f"kafka.{key}={t}", f"{key.upper()} = '{t}'",
            f"config {{{key}={t}, client.id=c}}"]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_text_redactor_hides_pairs_of_every_key(key):
    out = Redactor()("\n".join(_lines(key)))
    assert token(key) not in out and out.count("***") == len(_lines(key))


@pytest.fixture(scope="module")
def installed_log():
    """What a process that called ``install()`` logs: every key's lines, as messages, arguments and
    in a traceback."""
    code = ("import logging, sys, json; from kafka_eos.config.redact import install; install();"
            "logging.basicConfig(stream=sys.stdout, level=logging.INFO, format='%(message)s');"
            "log = logging.getLogger('any.library');"
            "lines = json.loads(sys.argv[1])\n"
            "for line in lines:\n"
            "    log.info(line); log.info('arg %s', line)\n"
            "    try:\n        raise ValueError(line)\n"
            "    except ValueError:\n        log.exception('failed')\n")
    lines = [line for key in SECRET_KEYS for line in _lines(key)]
    return subprocess.run([sys.executable, "-c", code, json.dumps(lines)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_installed_log_redaction_hides_every_key(installed_log, key):
    assert token(key) not in installed_log and "ValueError" in installed_log


# --- the source and sink options -------------------------------------------------------------

@pytest.mark.parametrize("key", SECRET_KEYS)
def test_source_options_hide_the_key(key):
    options = {**SOURCE_BASE, f"kafka.{key}": value(key), "kafka.sasl.username": "svc-principal"}
    parsed = parse_source_options(options, streaming=True)
    assert token(key) not in repr(parsed) and token(key) not in str(redacted(parsed.kafka_conf))
    assert "svc-principal" in repr(parsed)
    for broken in ({"subscribe": ""}, {"maxOffsetsPerTrigger": "0"}, {"kafka.isolation.level": "read_uncommitted"}):
        with pytest.raises(SourceOptionError) as err:
            parse_source_options({**options, **broken}, streaming=True)
        assert token(key) not in str(err.value)


def test_source_jaas_error_hides_the_line():
    with pytest.raises(SourceOptionError) as err:
        parse_source_options({**SOURCE_BASE, "kafka.sasl.jaas.config": 'Custom required secret="leakJaasZq9";'},
                             streaming=True)
    assert "leakJaasZq9" not in str(err.value)


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_sink_config_hides_the_key(key):
    options = {**SINK_BASE, f"kafka.{key}": value(key), "kafka.sasl.username": "svc-principal"}
    cfg = sink_config(options)
    assert token(key) not in repr(cfg) and token(key) not in str(cfg) and "svc-principal" in repr(cfg)
    with pytest.raises(SinkConfigError) as err:
        sink_config({**options, "kafka.acks": "1", "kafka.transactional.id": "x"})
    assert token(key) not in str(err.value)


# --- Spark's redaction settings --------------------------------------------------------------

@pytest.mark.parametrize("setting", ["spark.redaction.regex", "spark.sql.redaction.options.regex"])
def test_spark_redaction_matches_every_secret_option(setting):
    from kafka_eos.connectors.pipeline.runner import RUN_CONF
    regex = re.compile(RUN_CONF[setting])
    assert RUN_CONF[setting] == spark_redaction_conf()[setting]
    names = [n for k in SECRET_KEYS for n in (k, f"kafka.{k}", f"spark.hadoop.{k}")]
    names += ["kafka.sasl.jaas.config", "kafka.ssl.key.password", "schema.registry.basic.auth.user.info"]
    assert not [n for n in names if not regex.search(n)]
    assert not [n for n in PUBLIC_KEYS if regex.search(f"kafka.{n}")]


# --- OAuth settings: only the secret ones are hidden ------------------------------------------

# librdkafka's CONFIGURATION.md (2.x) and the Java client's OAUTHBEARER settings: identifiers,
# URLs, file paths and choices are shown (some hold a marker: token, credential, private) ...
OAUTH_PUBLIC = ["sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.client.id",
                "sasl.oauthbearer.client.credentials.client.id", "sasl.oauthbearer.scope",
                "sasl.oauthbearer.method", "sasl.oauthbearer.grant.type", "sasl.oauthbearer.extensions",
                "sasl.oauthbearer.assertion.algorithm", "sasl.oauthbearer.assertion.private.key.file",
                "sasl.oauthbearer.assertion.file", "sasl.oauthbearer.assertion.claim.sub",
                "sasl.oauthbearer.assertion.jwt.template.file", "sasl.oauthbearer.metadata.authentication.type",
                "sasl.oauthbearer.jwks.endpoint.url", "enable.sasl.oauthbearer.unsecure.jwt"]
# ... the client secret (and its alias), the key, its passphrase and the free-form config are not.
OAUTH_SECRET = ["sasl.oauthbearer.client.secret", "sasl.oauthbearer.client.credentials.client.secret",
                "sasl.oauthbearer.config", "sasl.oauthbearer.assertion.private.key.pem",
                "sasl.oauthbearer.assertion.private.key.passphrase", "x.sasl.oauthbearer.token",
                "x.access.token", "x.credentials", "x.private.key"]


@pytest.mark.parametrize("key", OAUTH_PUBLIC)
def test_public_oauth_settings_are_shown_everywhere(key):
    shown = "https://idp.example.com/oauth2/default/v1/keys"
    assert not is_secret_key(key) and not is_secret_key(f"kafka.{key}")
    assert redacted({key: shown}) == {key: shown}
    assert Redactor()(f"{key}={shown}, kafka.{key}: {shown}") == f"{key}={shown}, kafka.{key}: {shown}"
    # Spark's own default for data source options ("url") is kept: not asserted here
    assert not re.search(spark_redaction_conf()["spark.redaction.regex"], f"kafka.{key}")


@pytest.mark.parametrize("key", OAUTH_SECRET)
def test_secret_oauth_settings_stay_hidden(key):
    assert is_secret_key(key) and is_secret_key(f"kafka.{key}") and is_secret_key(key.upper())
    assert redacted({key: "leakOAuthZq9"}) == {key: "***"}
    assert "leakOAuthZq9" not in Redactor()(f"{key}=leakOAuthZq9 kafka.{key}: leakOAuthZq9")
    for regex in spark_redaction_conf().values():
        assert re.search(regex, f"kafka.{key}")


def test_oauth_plan_shows_the_endpoint_and_hides_the_secret(tmp_path):
    data = valid(tmp_path)
    data["source"]["kafka"]["properties"] = {
        "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "etl-app",
        "sasl.oauthbearer.client.secret": "leakClientSecretZq9", "sasl.oauthbearer.scope": "kafka.read",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token"}
    cfg, _ = load(tmp_path, data, {})
    assert cfg is not None
    plan = describe.render(cfg, {})
    assert "https://idp.example.com/oauth2/token" in plan and "etl-app" in plan and "kafka.read" in plan
    assert "leakClientSecretZq9" not in plan and "leakClientSecretZq9" not in repr(cfg)
