"""Exit codes of `validate` and `run`: 0 valid, 1 invalid, 2 unreachable, 3 not authorized (a refused
login or a missing ACL), and which wins when a run finds several."""
from __future__ import annotations

import pytest

from kafka_eos.config import live
from kafka_eos.config.model import KafkaCluster
from kafka_eos.config.violations import (EXIT_INVALID, EXIT_UNAUTHORIZED, EXIT_UNREACHABLE, EXIT_VALID, INVALID,
                                         UNAUTHORIZED, UNREACHABLE, Violation, exit_code)
from kafka_eos.offsets.acl_advice import MissingAcl
from kafka_eos.txn.cluster import acl_checks, broker_configs
from kafka_eos.txn.cluster.broker_configs import AuthenticationFailed, DescribeConfigsFailed
from tests.factories import load, valid

CLUSTER = KafkaCluster(bootstrap_servers="127.0.0.1:1")


def _v(kind: str) -> Violation:
    return Violation("sink.kafka", "m", "f", kind=kind)


def test_each_kind_has_its_own_code():
    assert (EXIT_VALID, EXIT_INVALID, EXIT_UNREACHABLE, EXIT_UNAUTHORIZED) == (0, 1, 2, 3)
    assert [exit_code([_v(k)]) for k in (INVALID, UNREACHABLE, UNAUTHORIZED)] == [1, 2, 3]
    assert exit_code([]) == 0


@pytest.mark.parametrize("kinds,expected", [
    ((UNAUTHORIZED, INVALID), 1),       # the file must be fixed whatever the brokers say
    ((UNREACHABLE, UNAUTHORIZED), 3),   # a refusal is a definite answer; an outage may pass
    ((UNREACHABLE, INVALID, UNAUTHORIZED), 1),
])
def test_the_code_of_several_problems(kinds, expected):
    assert exit_code([_v(k) for k in kinds]) == expected


def _refusing(error):
    def ask(conf, timeout_s):
        raise error
    return ask


def test_a_refused_login_is_unauthorized_for_validate_and_the_settings_fault_for_status(monkeypatch, tmp_path):
    refused = AuthenticationFailed("authentication failed for user 'etl' with SASL mechanism SCRAM-SHA-512",
                                   "check sasl.username and sasl.password")
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", _refusing(refused))
    cfg, _ = load(tmp_path, valid(tmp_path))
    _, problems = live.live_context(cfg)
    assert [(v.path, v.kind) for v in problems] == [("sink.kafka.properties", UNAUTHORIZED)]
    assert exit_code(problems) == 3
    with pytest.raises(live.ClusterProblem) as seen:
        live.transaction_max_timeout_ms(CLUSTER)
    assert seen.value.refused_login and seen.value.violation.kind == INVALID  # what `status` reads


@pytest.mark.parametrize("detail,kind", [("KafkaError{code=CLUSTER_AUTHORIZATION_FAILED}", UNAUTHORIZED),
                                         ("no answer within the timeout", UNREACHABLE)])
def test_describe_configs_refused_as_not_authorized_is_unauthorized(monkeypatch, detail, kind):
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", _refusing(DescribeConfigsFailed(1, detail)))
    with pytest.raises(live.ClusterProblem) as seen:
        live.transaction_max_timeout_ms(CLUSTER)
    assert seen.value.for_validate().kind == kind


def test_a_missing_acl_exits_3_not_2(monkeypatch, tmp_path):
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", lambda conf, timeout_s: 600_000)
    monkeypatch.setattr(acl_checks, "topics_missing", lambda conf, topics, op, t: [
        MissingAcl("User:etl", "topic", sorted(topics)[0], op)])
    monkeypatch.setattr(acl_checks, "sink_missing", lambda conf, topics, prefix, t: [])
    cfg, _ = load(tmp_path, valid(tmp_path))
    _, problems = live.live_context(cfg)
    assert problems and {v.kind for v in problems} == {UNAUTHORIZED}
    assert exit_code(problems) == 3
