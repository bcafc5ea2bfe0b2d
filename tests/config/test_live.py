"""Live checks: what each failure of asking a broker (``kafka_eos.txn.cluster.broker_configs``) becomes."""
from __future__ import annotations

import pytest

from kafka_eos.config import live
from kafka_eos.config.model import KafkaCluster
from kafka_eos.config.violations import INVALID, UNAUTHORIZED, UNREACHABLE
from kafka_eos.txn.cluster import broker_configs
from kafka_eos.txn.cluster.broker_configs import ClusterUnreachable, DescribeConfigsFailed, SettingsRefused

CLUSTER = KafkaCluster(bootstrap_servers="127.0.0.1:1")


def test_settings_the_client_refuses_are_invalid():
    with pytest.raises(SettingsRefused):
        broker_configs.admin_client({"bootstrap.servers": "127.0.0.1:1", "no.such.setting": "1"})
    refused = KafkaCluster(bootstrap_servers="127.0.0.1:1", properties=(("no.such.setting", "1"),))
    with pytest.raises(live.ClusterProblem) as info:
        live.transaction_max_timeout_ms(refused, timeout_s=0.5)
    v = info.value.violation
    assert (v.path, v.kind) == ("sink.kafka.properties", INVALID) and "refuses these settings" in v.message


def test_a_silent_cluster_is_unreachable():
    with pytest.raises(live.ClusterProblem) as info:
        live.reachable(CLUSTER, "source.kafka", 0.5)
    v = info.value.violation
    assert (v.path, v.kind) == ("source.kafka.bootstrap_servers", UNREACHABLE)
    assert v.message.startswith("cannot reach Kafka at 127.0.0.1:1 within 0.5s (") and "--offline" in v.fix


@pytest.mark.parametrize("error,message", [
    (ClusterUnreachable("x", no_brokers=True), "the cluster answered with no live brokers"),
    (DescribeConfigsFailed(3, "denied"), "DescribeConfigs on broker 3 failed: denied"),
])
def test_broker_failures_map_to_unreachable_violations(monkeypatch, error, message):
    def fail(conf, timeout_s):
        raise error
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", fail)
    with pytest.raises(live.ClusterProblem) as info:
        live.transaction_max_timeout_ms(CLUSTER)
    v = info.value.violation
    assert (v.path, v.kind, v.message) == ("sink.kafka.bootstrap_servers", UNREACHABLE, message)


def test_the_live_context_carries_the_brokers_maximum(monkeypatch, tmp_path):
    from tests.factories import load, valid
    asked = []
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms",
                        lambda conf, timeout_s: asked.append(conf["bootstrap.servers"]) or 600_000)
    monkeypatch.setattr(live, "acl_problems", lambda *args, **kwargs: [])
    cfg, _ = load(tmp_path, valid(tmp_path))
    ctx, problems = live.live_context(cfg)
    assert (ctx.broker_max_timeout_ms, problems, asked) == (600_000, [], ["localhost:9092"])


def test_missing_acls_are_live_violations_naming_the_command(monkeypatch, tmp_path):
    from kafka_eos.offsets.acl_advice import MissingAcl
    from kafka_eos.txn.cluster import acl_checks
    from tests.factories import load, valid
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", lambda conf, timeout_s: 600_000)
    monkeypatch.setattr(acl_checks, "topics_missing", lambda conf, topics, op, t: [])
    monkeypatch.setattr(acl_checks, "sink_missing", lambda conf, topics, prefix, t: [
        MissingAcl("User:etl", "transactional-id", prefix, "Write", prefixed=True)])
    cfg, _ = load(tmp_path, valid(tmp_path))
    _, problems = live.live_context(cfg)
    [v] = problems
    assert (v.path, v.kind) == ("sink.transactional_id_prefix", UNAUTHORIZED)
    assert "User:etl may not Write transactional-id prefix" in v.message
    assert (f"kafka-acls --bootstrap-server localhost:9092 --add --allow-principal User:etl --operation Write "
            f"--transactional-id {cfg.sink.transactional_id_prefix} --resource-pattern-type prefixed") in v.fix
