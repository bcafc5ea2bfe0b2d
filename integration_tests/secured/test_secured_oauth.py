"""OAUTHBEARER end to end on a real broker that validates JWTs (Kafka's
``OAuthBearerValidatorCallbackHandler`` against the JWKS of ``connectors/dev/oauth_server``):
executors log in with librdkafka's ``sasl.oauthbearer.method=oidc`` (client credentials), the
driver's control plane with ``kafka_eos.oauth_tokens`` from the same settings. The token's
``sub`` is ``etl``, so the pipeline has only etl's ACLs. Tokens live ``LIFETIME_S`` and the broker
ends a session at its token's expiry (``connections.max.reauth.ms``), so every run here outlives
its tokens: a client that did not refresh would lose its connections."""
from __future__ import annotations

import json
import secrets
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from kafka.errors import KafkaError

from integration_tests.kafka_tools import assert_exactly_once, unique
from integration_tests.pipeline_cli import CliRun, kafka_eos, progress_lines
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from integration_tests.secured_cluster import (ADMIN_PASSWORD, ETL_PASSWORD, SECURED_JOB, SECURITY_ENV,
                                               check_exactly_once_as_admin, create_topics, grant, secured_pipeline,
                                               seed_orders, seeded_topics)
from kafka_eos.client_factory import control_plane_client
from kafka_eos.connectors.dev import security
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster
from kafka_eos.connectors.dev.oauth_server import OAuthClient, OAuthServer
from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env, spark_submit_binary
from kafka_eos.oauth_tokens import ClientCredentialsTokens, _CachedTokens
from kafka_eos.secrets import Secret
from kafka_eos.txn.cluster.client_settings import kafka_python_settings

CLIENT, CLIENT_SECRET = "etl-app", f"cs-{secrets.token_hex(12)}"
LIFETIME_S = 30
IDS = 3000


@pytest.fixture(scope="module")
def oauth() -> Iterator[OAuthServer]:
    with OAuthServer((OAuthClient(CLIENT, Secret(CLIENT_SECRET), "etl"),), lifetime_s=LIFETIME_S) as server:
        yield server


@pytest.fixture(scope="module")
def oauth_broker(oauth) -> Iterator[LocalKafkaCluster]:
    settings = ClusterSettings(security="sasl_ssl", passwords=(("admin", ADMIN_PASSWORD), ("etl", ETL_PASSWORD)),
                               extra=security.oauth_listener(oauth.jwks_url, reauth_ms=600_000),
                               jvm_properties=security.oauth_jvm(oauth.jwks_url))
    with LocalKafkaCluster(settings) as cluster:
        yield cluster


def oauth_conf(cluster: LocalKafkaCluster, oauth: OAuthServer, secret: str = CLIENT_SECRET) -> dict[str, str]:
    return {"bootstrap.servers": cluster.bootstrap,
            **security.oauth_client_conf(str(cluster.security.tls.ca_file), oauth.token_url, CLIENT, secret)}


def oauth_pipeline(cluster, oauth, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """orders-json.yaml (its own topics, etl's ACLs) logging in with OAUTHBEARER; the secret from the environment."""
    path, names = secured_pipeline(cluster, tmp_path)
    doc = yaml.safe_load(path.read_text())
    properties = doc["source"]["kafka"]["properties"]  # the sink's cluster is the same YAML anchor
    for key in ("sasl.username", "sasl.password"):
        properties.pop(key)
    properties.update({**oauth_conf(cluster, oauth), "sasl.oauthbearer.client.secret": "${OAUTH_CLIENT_SECRET}"})
    properties.pop("bootstrap.servers")
    path.write_text(yaml.safe_dump(doc))
    return path, names


def cli(command: str, path: Path, cluster, tmp_path: Path, secret: str = CLIENT_SECRET, *args: str) -> CliRun:
    return kafka_eos([command, str(path), *args], cluster.bootstrap, tmp_path / "checkpoints",
                     env={"OAUTH_CLIENT_SECRET": secret})


def test_validate_run_and_status_over_oauthbearer(oauth_broker, oauth, tmp_path):
    path, names = oauth_pipeline(oauth_broker, oauth, tmp_path)
    seed_orders(oauth_broker, names["input"], "oauth", IDS)
    validate = cli("validate", path, oauth_broker, tmp_path)
    assert validate.code == 0, validate.log()
    before = oauth.issued(CLIENT)
    run = cli("run", path, oauth_broker, tmp_path, CLIENT_SECRET, "--once")
    assert run.code == 0, run.log()
    assert progress_lines(run, "orders-json"), run.stdout
    assert oauth.issued(CLIENT) > before  # the run's clients logged in with tokens of this server
    assert_exactly_once(check_exactly_once_as_admin(oauth_broker, names["output"],
                                                    expected={f"oauth-{i}" for i in range(IDS)},
                                                    id_of=lambda m: json.loads(m.value())["order_id"]))
    status = cli("status", path, oauth_broker, tmp_path)
    assert status.code == 0 and "status: healthy" in status.stdout, status.log()
    for done in (validate, run, status):
        assert CLIENT_SECRET not in done.stdout + done.stderr


def test_validate_names_a_refused_client_secret_as_an_oauth_authentication_failure(oauth_broker, oauth, tmp_path):
    path, _ = oauth_pipeline(oauth_broker, oauth, tmp_path)
    wrong = f"wrong-{secrets.token_hex(8)}"
    validate = cli("validate", path, oauth_broker, tmp_path, wrong, "--timeout", "5")
    text = validate.stdout + validate.stderr
    assert validate.code == 3, validate.log()  # a refused login is not authorized (exit 3), as a wrong password is
    assert "OAuth authentication failed" in text and "HTTP 401" in text and f"client '{CLIENT}'" in text, text
    assert "sasl.oauthbearer.client.secret" in text and wrong not in text


@pytest.fixture
def names(oauth_broker):
    return seeded_topics(oauth_broker, "oauth", IDS)


def start_oauth_job(cluster, oauth, args: list[str], log: Path) -> subprocess.Popen:
    """The secured test job (real spark-submit) logging in with OAUTHBEARER; settings in its environment."""
    conf = {f"kafka.{k}": v for k, v in oauth_conf(cluster, oauth).items() if k != "bootstrap.servers"}
    cmd = [spark_submit_binary(), "--master", "local[2,3]"]
    for key, value in SMALL_CONF.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(SECURED_JOB), "--bootstrap", cluster.bootstrap, *args]
    out = open(log, "ab")
    return subprocess.Popen(cmd, env={**python_env(), SECURITY_ENV: json.dumps(conf)}, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)


def job_args(names, tmp_path: Path, max_offsets: int) -> list[str]:
    return ["--input", names["input"], "--output", names["output"], "--checkpoint", str(tmp_path / "checkpoint"),
            "--prefix", names["prefix"], "--max-offsets", str(max_offsets)]


def finish(proc: subprocess.Popen, log: Path, timeout: float = 900) -> None:
    try:
        rc = proc.wait(timeout)
    except Exception:
        kill_group(proc)
        raise
    assert rc == 0, f"job failed ({rc}):\n{tail(log)}"


@pytest.mark.chaos  # a driver kill and restart through spark-submit, ~2-5 min: `make chaos`
def test_driver_killed_after_the_decision_recovers_exactly_once_over_oauthbearer(oauth_broker, oauth, names, tmp_path):
    args, log = job_args(names, tmp_path, 1000), tmp_path / "job.log"
    (tmp_path / "faults").mkdir()
    proc = start_oauth_job(oauth_broker, oauth, args + ["--fault", "after_decision@1", "--fault-dir",
                                                        str(tmp_path / "faults")], log)
    wait_for((tmp_path / "faults", "after_decision.*"), proc, 600, log)
    kill_group(proc)
    finish(start_oauth_job(oauth_broker, oauth, args, log), log)
    assert_exactly_once(check_exactly_once_as_admin(oauth_broker, names["output"], ids=IDS))
    assert "batch 1 was decided but not fully committed" in log.read_text(), "the restart finished the decided batch"
    assert CLIENT_SECRET not in log.read_text()


class OneToken(_CachedTokens):
    """A client that never refreshes: the one token it was given."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._one = token

    def _fetch(self) -> tuple[str, float]:
        return self._one, time.time() + 3600


@pytest.mark.chaos  # runs past two 30 s token lifetimes by design: `make chaos`
def test_tokens_expiring_mid_run_are_refreshed_without_a_stop(oauth_broker, oauth, names, tmp_path):
    conf = oauth_conf(oauth_broker, oauth)
    stale = control_plane_client({**kafka_python_settings(conf), "sasl_oauth_token_provider": OneToken(
        ClientCredentialsTokens(oauth.token_url, CLIENT, Secret(CLIENT_SECRET)).token())})
    assert stale.describe_cluster()["brokers"], "a fresh token logs in"
    started, before = time.monotonic(), oauth.issued(CLIENT)
    log = tmp_path / "job.log"
    # 150 batches of 20, so the run outlives two token lifetimes even at 0.4 s a batch (75 batches
    # of 40 took 57 s once the tasks stopped importing kafka-python: shorter than the two lifetimes)
    finish(start_oauth_job(oauth_broker, oauth, job_args(names, tmp_path, 20), log), log)
    took = time.monotonic() - started
    assert took > 2 * LIFETIME_S, f"the run took {took:.0f}s: too short to outlive its tokens"
    assert_exactly_once(check_exactly_once_as_admin(oauth_broker, names["output"], ids=IDS))
    # driver + executors fetched new tokens as theirs neared expiry (one run, no restart) ...
    assert oauth.issued(CLIENT) - before >= 4, oauth.issued(CLIENT) - before
    # ... and the broker does end sessions whose token expired: the client that kept its token is out
    with pytest.raises(KafkaError):
        stale.describe_cluster()


TOKEN_URL: list[str] = []  # where ``fetch_token`` asks (set by the test; the callback runs in this process)


def fetch_token(config: str) -> tuple[str, float]:
    """A token callback (confluent-kafka's oauth_cb contract), as a user's AWS MSK IAM signer would be."""
    tokens = ClientCredentialsTokens(TOKEN_URL[0], CLIENT, Secret(CLIENT_SECRET))
    return tokens.token(), time.time() + LIFETIME_S


def test_a_token_callback_serves_librdkafka_clients_and_the_control_plane(oauth_broker, oauth):
    from kafka_eos.client_factory import Noise, admin, producer
    TOKEN_URL[:] = [oauth.token_url]
    conf = {"bootstrap.servers": oauth_broker.bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(oauth_broker.security.tls.ca_file), "sasl.mechanism": "OAUTHBEARER",
            "kafka_eos.oauthbearer.callback": f"{__name__}:fetch_token"}
    before = oauth.issued(CLIENT)
    assert admin(conf, Noise.ERRORS).list_topics(timeout=30).brokers
    writer = producer(conf, Noise.ERRORS)
    topic = unique("cb")
    create_topics(oauth_broker, {topic: 1})
    grant(oauth_broker, [], [topic], unique("cb"))
    writer.produce(topic, b"v")
    assert writer.flush(30) == 0
    assert control_plane_client(kafka_python_settings(conf)).describe_cluster()["brokers"]
    assert oauth.issued(CLIENT) - before >= 3  # admin, producer, control plane: each through the callback
