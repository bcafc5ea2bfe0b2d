"""The orders-json example over SASL_SSL (SCRAM-SHA-512, TLS, ACLs on), run by ``kafka-eos run``
as the ``etl`` user with only a pipeline's ACLs: every order exactly once in read_committed output."""
from __future__ import annotations

import pytest

import json

import yaml

from integration_tests.kafka_tools import assert_exactly_once, unique
from integration_tests.pipeline_cli import progress_lines
from integration_tests.secured_cluster import (ETL_PASSWORD, check_exactly_once_as_admin, create_topics, read_committed,
                                               run_secured, secured_broker, secured_pipeline, seed_orders)

__all__ = ["secured_broker"]
ORDERS = 3000


@pytest.mark.chaos  # `make chaos`: make test counts a SASL_SSL run exactly once in test_secured_secrets
def test_orders_json_over_sasl_ssl_is_exactly_once(secured_broker, tmp_path):
    path, names = secured_pipeline(secured_broker, tmp_path)
    seed_orders(secured_broker, names["input"], "sec", ORDERS)
    run = run_secured(secured_broker, path, tmp_path)
    assert run.code == 0, run.log()
    assert progress_lines(run, "orders-json"), run.stdout
    assert_exactly_once(check_exactly_once_as_admin(secured_broker, names["output"],
                                                    expected={f"sec-{i}" for i in range(ORDERS)},
                                                    id_of=lambda m: json.loads(m.value())["order_id"]))
    assert ETL_PASSWORD not in run.stdout + run.stderr


@pytest.mark.chaos  # a long run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_without_the_transactional_id_acl_the_sink_is_refused_and_writes_nothing(secured_broker, tmp_path):
    """ACLs are real: the same pipeline with a transactional-id prefix etl has no ACL for fails."""
    path, names = secured_pipeline(secured_broker, tmp_path)
    seed_orders(secured_broker, names["input"], "noacl", 100)
    doc = yaml.safe_load(path.read_text())
    doc["sink"]["transactional_id_prefix"] = unique("no-acl")
    path.write_text(yaml.safe_dump(doc))
    run = run_secured(secured_broker, path, tmp_path)
    assert run.code != 0, run.log()
    assert "authoriz" in (run.stdout + run.stderr).lower(), run.log()
    assert read_committed(secured_broker, names["output"]) == []


def test_a_source_topic_without_read_acl_fails_the_run(secured_broker, tmp_path):
    path, _ = secured_pipeline(secured_broker, tmp_path)
    doc = yaml.safe_load(path.read_text())
    forbidden = unique("forbidden")
    doc["source"]["topics"] = [forbidden]
    create_topics(secured_broker, {forbidden: 1})
    seed_orders(secured_broker, forbidden, "forbidden", 10)
    path.write_text(yaml.safe_dump(doc))
    run = run_secured(secured_broker, path, tmp_path)
    assert run.code != 0, run.log()
    assert "TOPIC_AUTHORIZATION_FAILED" in run.log() and f"--operation Read --topic {forbidden}" in run.log(), run.log()
