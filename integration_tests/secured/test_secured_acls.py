"""Missing ACLs on the secured cluster: a user lacking exactly one of a pipeline's ACLs gets an
error naming the principal, the resource and the kafka-acls command, from ``kafka-eos validate``
(exit 3: not authorized, apart from exit 2 for an unreachable broker), from ``kafka-eos run`` and
when a query built without the CLI starts, and nothing reaches the output.

IdempotentWrite on the cluster is not a case: since Kafka 3.0 (KIP-679) a transactional producer
with Write on its transactional id needs no cluster ACL, so a user without it runs (the checks
report IdempotentWrite only if the broker itself refuses the transactional-id probe for it).
"""
from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AclOperation, ResourceType

from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.secured_cluster import (read_committed, secured_broker, secured_pipeline, seed_orders,
                                               start_secured_job)
from kafka_eos.connectors.dev.acls import add_user, grant_pipeline_except

__all__ = ["secured_broker"]
CASES = ["topic-read", "group-read", "output-write", "txn-write"]


def _command(names: dict[str, str], which: str) -> tuple[tuple, str]:
    """(the binding left out, the end of the kafka-acls command the error must give)."""
    return {
        "topic-read": ((ResourceType.TOPIC, names["input"], AclOperation.READ), f"--operation Read --topic {names['input']}"),
        "group-read": ((ResourceType.GROUP, names["group"], AclOperation.READ), f"--operation Read --group {names['group']}"),
        "output-write": ((ResourceType.TOPIC, names["output"], AclOperation.WRITE),
                         f"--operation Write --topic {names['output']}"),
        "txn-write": ((ResourceType.TRANSACTIONAL_ID, names["prefix"], AclOperation.WRITE),
                      f"--operation Write --transactional-id {names['prefix']} --resource-pattern-type prefixed"),
    }[which]


def _restricted(cluster, tmp_path: Path, which: str) -> tuple[Path, dict[str, str], tuple[str, str], str]:
    """(pipeline file, its names, (user, password), the kafka-acls command) for a user granted every
    ACL of the pipeline but the one ``which`` names; the input holds 20 committed orders."""
    path, names = secured_pipeline(cluster, tmp_path)
    user, password = unique("user"), f"pw-{secrets.token_hex(8)}"
    names["group"] = unique("group")
    doc = yaml.safe_load(path.read_text())
    doc["source"]["kafka"]["properties"]["group.id"] = names["group"]
    path.write_text(yaml.safe_dump(doc))
    add_user(cluster.admin_conf(), user, password)
    omit, command = _command(names, which)
    grant_pipeline_except(cluster.admin_conf(), user, [names["input"]], [names["output"], names["dlq"]],
                          names["prefix"], omit, groups=[names["group"]])
    time.sleep(1)  # ACLs reach the broker's authorizer through the metadata log
    seed_orders(cluster, names["input"], which, 20)
    expected = f"kafka-acls --bootstrap-server {cluster.bootstrap} --add --allow-principal User:{user} {command}"
    return path, names, (user, password), expected


@pytest.mark.parametrize("which", CASES)
def test_a_user_missing_one_acl_is_told_which_to_add(secured_broker, tmp_path, which):
    cluster = secured_broker
    path, names, (user, password), expected = _restricted(cluster, tmp_path, which)
    env = {"KAFKA_USERNAME": user, "KAFKA_PASSWORD": password}

    validate = kafka_eos(["validate", "--timeout", "20", str(path)], cluster.bootstrap, tmp_path / "cp", env=env)
    assert validate.code == 3, validate.log()
    assert expected in validate.log(), validate.log()
    assert password not in validate.log()

    run = kafka_eos(["run", str(path), "--once"], cluster.bootstrap, tmp_path / "cp", env=env)
    assert run.code != 0, run.log()
    assert expected in run.log(), run.log()
    assert password not in run.log()
    assert read_committed(cluster, names["output"]) == []


@pytest.mark.parametrize("which", [pytest.param("topic-read", marks=pytest.mark.chaos),  # `make chaos`: make test
                                   pytest.param("output-write", marks=pytest.mark.chaos),  # keeps one query start
                                   "txn-write"])
def test_a_query_started_without_the_cli_fails_at_start_naming_the_acl(secured_broker, tmp_path, which):
    """No live validation in front: the source's and the sink's own start checks name the ACL.
    Group Read is not checked there: the source writes its group's offsets only for lag monitoring,
    after a batch committed, and a refusal is logged without failing the query."""
    cluster = secured_broker
    _, names, user, expected = _restricted(cluster, tmp_path, which)
    log = tmp_path / "job.log"
    args = ["--input", names["input"], "--output", names["output"], "--checkpoint", str(tmp_path / "job-cp"),
            "--prefix", names["prefix"]]
    code = start_secured_job(cluster, args, log, master="local[2]", user=user).wait(300)
    text = log.read_text(errors="replace")
    assert code != 0, text
    assert expected in text, text
    assert user[1] not in text
    assert read_committed(cluster, names["output"]) == []
