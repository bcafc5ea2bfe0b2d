"""The CLI's exit codes for a principal the brokers refuse: 3 (not authorized), not 2 (unreachable)."""
from __future__ import annotations

import pytest

from kafka_eos.config import live
from kafka_eos.connectors.cli import main
from kafka_eos.connectors.operate import status
from kafka_eos.offsets.acl_advice import MissingAcl
from kafka_eos.offsets.kafka_offsets import TopicAuthorizationError
from kafka_eos.txn.cluster import acl_checks, broker_configs
from kafka_eos.txn.cluster.broker_configs import AuthenticationFailed
from tests.factories import valid, write

PREFIX_ACL = "--operation Write --transactional-id t-eos --resource-pattern-type prefixed"


@pytest.fixture
def no_prefix_acl(monkeypatch):
    """The brokers answer; the principal lacks Write on the transactional-id prefix."""
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", lambda conf, timeout_s: 600_000)
    monkeypatch.setattr(live, "silent_brokers", lambda cfg, *args: [])
    monkeypatch.setattr(acl_checks, "topics_missing", lambda conf, topics, op, t: [])
    monkeypatch.setattr(acl_checks, "group_missing", lambda conf, group, t: [])
    monkeypatch.setattr(acl_checks, "sink_missing", lambda conf, topics, prefix, t: [
        MissingAcl("User:etl", "transactional-id", prefix, "Write", prefixed=True)])


@pytest.mark.parametrize("command", [["validate"], ["run", "--once"]])
def test_a_missing_acl_exits_3(no_prefix_acl, tmp_path, capsys, command):
    path = write(tmp_path, "p.yaml", valid(tmp_path))
    assert main([command[0], str(path), *command[1:]]) == 3
    assert PREFIX_ACL in capsys.readouterr().err


def test_a_refused_login_exits_3_from_validate(monkeypatch, tmp_path, capsys):
    def refuse(conf, timeout_s):
        raise AuthenticationFailed("authentication failed for user 'etl' with SASL mechanism SCRAM-SHA-512", "fix")
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", refuse)
    monkeypatch.setattr(live, "silent_brokers", lambda cfg, *args: [])
    path = write(tmp_path, "p.yaml", valid(tmp_path))
    assert main(["validate", str(path)]) == 3
    assert "authentication failed for user 'etl'" in capsys.readouterr().err


def test_status_exits_3_when_the_source_may_not_read_its_topic(monkeypatch, tmp_path, capsys):
    def denied(cfg, timeout_s):
        raise TopicAuthorizationError([MissingAcl("User:etl", "topic", "in", "Read")], "localhost:9092")
    monkeypatch.setattr(status, "gather", denied)
    assert main(["status", str(write(tmp_path, "p.yaml", valid(tmp_path)))]) == 3
    assert "--operation Read --topic in" in capsys.readouterr().err
