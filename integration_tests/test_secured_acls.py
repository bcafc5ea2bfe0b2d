"""Missing ACLs on the secured cluster: a user lacking exactly one of a pipeline's ACLs gets an
error naming the principal, the resource and the kafka-acls command, from ``kafka-eos validate``
(exit 2, like every live problem) and when the query starts, and nothing reaches the output."""
from __future__ import annotations

import secrets
import time

import pytest
import yaml
from confluent_kafka.admin import AclOperation, ResourceType

from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.secured import read_committed, secured_broker, secured_pipeline, seed_orders
from kafka_eos.connectors.dev.acls import add_user, grant_pipeline_except

__all__ = ["secured_broker"]


def _command(names: dict[str, str], which: str) -> tuple[tuple, str]:
    """(the binding left out, the end of the kafka-acls command the error must give)."""
    return {
        "topic-read": ((ResourceType.TOPIC, names["input"], AclOperation.READ), f"--operation Read --topic {names['input']}"),
        "group-read": ((ResourceType.GROUP, names["group"], AclOperation.READ), f"--operation Read --group {names['group']}"),
        "output-write": ((ResourceType.TOPIC, names["output"], AclOperation.WRITE),
                         f"--operation Write --topic {names['output']}"),
        "txn-write": ((ResourceType.TRANSACTIONAL_ID, names["prefix"], AclOperation.WRITE),
                      f"--operation Write --transactional-id {names['prefix']} --resource-pattern-type prefixed"),
        "idempotent-write": ((ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
                             "--operation IdempotentWrite --cluster"),
    }[which]


@pytest.mark.xfail(strict=False, reason="work in progress: the broker's authorized operations read as None "
                   "(all allowed) in txn/acl_checks.py; not yet diagnosed")
@pytest.mark.parametrize("which", ["topic-read", "group-read", "output-write", "txn-write", "idempotent-write"])
def test_a_user_missing_one_acl_is_told_which_to_add(secured_broker, tmp_path, which):
    cluster = secured_broker
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
    time.sleep(1)
    seed_orders(cluster, names["input"], which, 20)
    env = {"KAFKA_USERNAME": user, "KAFKA_PASSWORD": password}
    expected = f"kafka-acls --bootstrap-server {cluster.bootstrap} --add --allow-principal User:{user} {command}"

    validate = kafka_eos(["validate", "--timeout", "20", str(path)], cluster.bootstrap, tmp_path / "cp", env=env)
    assert validate.code == 2, validate.log()
    assert expected in validate.log(), validate.log()
    assert password not in validate.log()

    if which != "group-read":  # the source's group only receives monitoring offsets once a batch is done
        run = kafka_eos(["run", str(path), "--once"], cluster.bootstrap, tmp_path / "cp", env=env)
        assert run.code != 0, run.log()
        assert expected in run.log(), run.log()
    assert read_committed(cluster, names["output"]) == []
