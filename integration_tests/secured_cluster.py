"""Fixtures and helpers for tests on the local SASL_SSL (SCRAM-SHA-512, ACLs on) cluster.

Test files import the fixtures (``from integration_tests.secured_cluster import secured_broker``). The
``etl`` user's password is known to the tests (``ETL_PASSWORD``) so they can look for it in
every output; test data is written and read as ``admin``, the pipelines run as ``etl``.
"""
from __future__ import annotations

import json
import secrets
import subprocess
import time
import uuid
from pathlib import Path
from typing import Iterable, Iterator

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from integration_tests.kafka_tools import ExactlyOnceReport, check_exactly_once, read_all, unique
from integration_tests.pipeline_cli import EXAMPLES, CliRun, kafka_eos
from kafka_eos.connectors.demo_data import order
from kafka_eos.connectors.dev.acls import grant_pipeline
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster
from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env, spark_submit_binary

ETL_PASSWORD = f"etl-Pw-{secrets.token_hex(12)}"
ADMIN_PASSWORD = f"admin-Pw-{secrets.token_hex(12)}"
SECURED_JOB = Path(__file__).parent / "jobs" / "secured_pipeline.py"
SECURITY_ENV = "KAFKA_EOS_TEST_KAFKA_SECURITY"  # JSON of the job's kafka.* security options


@pytest.fixture(scope="session")
def secured_broker() -> Iterator[LocalKafkaCluster]:
    settings = ClusterSettings(security="sasl_ssl", passwords=(("admin", ADMIN_PASSWORD), ("etl", ETL_PASSWORD)))
    with LocalKafkaCluster(settings) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def mtls_broker() -> Iterator[LocalKafkaCluster]:
    """A secured broker of its own whose listener requires a client certificate signed by its CA
    (``ssl.client.auth=required``); its harness clients present the generated ``client.p12``."""
    settings = ClusterSettings(security="sasl_ssl", client_auth="required",
                               passwords=(("admin", ADMIN_PASSWORD), ("etl", ETL_PASSWORD)))
    with LocalKafkaCluster(settings) as cluster:
        yield cluster


def create_topics(cluster: LocalKafkaCluster, partitions: dict[str, int]) -> None:
    admin = AdminClient({**cluster.admin_conf(), "log_level": 3})
    futures = admin.create_topics([NewTopic(t, n, replication_factor=-1) for t, n in partitions.items()])
    for future in futures.values():
        future.result(30)


def grant(cluster: LocalKafkaCluster, inputs: Iterable[str], outputs: Iterable[str], prefix: str) -> None:
    grant_pipeline(cluster.admin_conf(), "etl", list(inputs), list(outputs), prefix)
    time.sleep(1)  # ACLs reach the broker's authorizer through the metadata log


def produce(cluster: LocalKafkaCluster, topic: str, records: list[tuple[bytes, bytes]], commit: bool = True) -> None:
    """As admin, in one transaction committed or aborted."""
    producer = Producer({**cluster.admin_conf(), "transactional.id": f"seed-{uuid.uuid4().hex}", "linger.ms": 20,
                         "log_level": 3})
    producer.init_transactions(30)
    producer.begin_transaction()
    for key, value in records:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
    producer.flush(60)
    (producer.commit_transaction if commit else producer.abort_transaction)(60)


def seed_orders(cluster: LocalKafkaCluster, topic: str, run: str, orders: int, chunk: int = 1000) -> None:
    """Orders ``<run>-0..orders-1`` in committed transactions, each followed by an aborted one."""
    for start in range(0, orders, chunk):
        produce(cluster, topic, [order(run, i) for i in range(start, min(orders, start + chunk))])
        produce(cluster, topic, [order(f"{run}-aborted", i) for i in range(start, start + 20)], commit=False)


def seeded_topics(cluster: LocalKafkaCluster, tag: str, ids: int) -> dict[str, str]:
    """Input and output topics (3 partitions) and a prefix, granted to the pipeline user; the input
    holds ids 0..ids-1 committed, with 20 aborted records after each 500."""
    names = {"input": unique("in"), "output": unique("out"), "prefix": unique(tag)}
    create_topics(cluster, {names["input"]: 3, names["output"]: 3})
    grant(cluster, [names["input"]], [names["output"]], names["prefix"])
    for start in range(0, ids, 500):
        produce(cluster, names["input"], [(str(i).encode(), str(i).encode()) for i in range(start, start + 500)])
        produce(cluster, names["input"], [(b"x", f"aborted-{start + i}".encode()) for i in range(20)],
                commit=False)
    return names


def read_committed(cluster: LocalKafkaCluster, topic: str) -> list:
    """Every committed record of ``topic``, read as admin."""
    return read_all(cluster.bootstrap, topic, conf=cluster.admin_conf(), timeout_s=120)


def check_exactly_once_as_admin(cluster: LocalKafkaCluster, topic: str, **kwargs) -> ExactlyOnceReport:
    return check_exactly_once(cluster.bootstrap, topic, conf=cluster.admin_conf(), **kwargs)


def job_env(cluster: LocalKafkaCluster, user: tuple[str, str] | None = None) -> dict[str, str]:
    """The secured job's environment: the settings of etl (or of ``user`` = (name, password)) as
    JSON (the password never in argv)."""
    conf = cluster.client_conf("etl")
    if user:
        conf.update({"sasl.username": user[0], "sasl.password": user[1]})
    security = {f"kafka.{k}": v for k, v in conf.items() if k != "bootstrap.servers"}
    return {**python_env(), SECURITY_ENV: json.dumps(security)}


def start_secured_job(cluster: LocalKafkaCluster, args: list[str], log: Path,
                      master: str = "local[2,3]", user: tuple[str, str] | None = None) -> subprocess.Popen:
    cmd = [spark_submit_binary(), "--master", master]
    for key, value in SMALL_CONF.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(SECURED_JOB), "--bootstrap", cluster.bootstrap, *args]
    out = open(log, "ab")
    return subprocess.Popen(cmd, env=job_env(cluster, user), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def secured_pipeline(cluster, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """orders-json.yaml on topics of its own, with the security settings its comment shows."""
    names = {"input": unique("orders"), "output": unique("priced"), "dlq": unique("dlq"), "prefix": unique("secured")}
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["kafka"]["properties"].update({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "${KAFKA_USERNAME}",
        "sasl.password": "${KAFKA_PASSWORD}", "ssl.ca.location": str(cluster.security.tls.ca_file)})
    doc["source"]["topics"], doc["sink"]["topic"] = [names["input"]], names["output"]
    doc["errors"]["dlq_topic"] = names["dlq"]
    doc["sink"]["transactional_id_prefix"] = names["prefix"]
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    path = tmp_path / "orders-secured.yaml"
    path.write_text(yaml.safe_dump(doc))
    create_topics(cluster, {names["input"]: 3, names["output"]: 3, names["dlq"]: 1})
    grant(cluster, [names["input"]], [names["output"], names["dlq"]], names["prefix"])
    return path, names


def run_secured(cluster, path: Path, tmp_path: Path, args: tuple[str, ...] = ()) -> CliRun:
    """``kafka-eos run <path> --once`` as etl; the password reaches the run only through its environment."""
    env = {"KAFKA_USERNAME": "etl", "KAFKA_PASSWORD": ETL_PASSWORD}
    return kafka_eos(["run", str(path), "--once", *args], cluster.bootstrap, tmp_path / "checkpoints", env=env)
