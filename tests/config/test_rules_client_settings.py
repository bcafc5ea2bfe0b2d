"""The client settings' one rule as a validation rule: refused settings are violations naming the
key and the fix, offline (before anything connects)."""
from __future__ import annotations

import pytest

from kafka_eos.config.violations import Context
from kafka_eos.connectors.dev.tls import generate
from kafka_eos.txn.cluster.client_settings import check_client_settings
from tests.factories import problems, valid


def mutate_problems(tmp_path, change):
    data = valid(tmp_path)
    change(data)
    return problems(tmp_path, data)

SASL = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "etl",
        "sasl.password": "Pw-Never-Shown-1"}


def with_sink(**properties):
    return lambda d: d["sink"]["kafka"].update(properties={**SASL, **properties})


def test_a_pkcs12_keystore_is_valid(tmp_path):
    tls = generate(tmp_path / "tls", "ks-Pw-2")
    found = mutate_problems(tmp_path, with_sink(**{"ssl.ca.location": str(tls.ca_file),
                                                   "ssl.keystore.location": str(tls.keystore),
                                                   "ssl.keystore.password": tls.keystore_password}))
    assert found == []


def test_a_jks_keystore_is_an_invalid_setting_with_the_keytool_command(tmp_path):
    jks = tmp_path / "client.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 32)
    found = mutate_problems(tmp_path, with_sink(**{"ssl.keystore.location": str(jks),
                                                   "ssl.keystore.password": "ks-Pw-3"}))
    assert [v.path for v in found] == ['sink.kafka.properties["ssl.keystore.location"]']
    assert "keytool -importkeystore" in found[0].fix and found[0].kind == "invalid"
    assert "ks-Pw-3" not in str(found[0]) and "Pw-Never-Shown-1" not in str(found[0])


def test_what_the_control_plane_cannot_carry_is_refused_on_the_exactly_once_sink_only(tmp_path):
    pem = {"ssl.key.pem": "-----BEGIN PRIVATE KEY-----"}
    found = mutate_problems(tmp_path, lambda d: (d["sink"]["kafka"].update(properties=pem),
                                                 d["source"]["kafka"].update(properties=pem)))
    assert [v.path for v in found] == ['sink.kafka.properties["ssl.key.pem"]']
    assert "ssl.key.location" in found[0].fix


def test_a_jks_truststore_is_refused_with_the_keytool_command(tmp_path):
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 32)
    found = mutate_problems(tmp_path, with_sink(**{"ssl.truststore.location": str(jks)}))
    assert [v.path for v in found] == ['sink.kafka.properties["ssl.truststore.location"]']
    assert "-deststoretype PKCS12, then set ssl.truststore.location=" in found[0].fix


def test_a_refused_setting_is_one_problem_and_the_cluster_is_not_asked(tmp_path):
    """validate (live) names a refused client setting once: the clusters are not asked with a
    client that cannot be built (before, a JKS truststore also read as 'the Kafka client refuses
    these settings ... use librdkafka setting names', a wrong fix)."""
    from tests.factories import load
    from kafka_eos.config.validate import validate_config
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 32)
    data = valid(tmp_path)
    with_sink(**{"ssl.truststore.location": str(jks)})(data)
    cfg, found = load(tmp_path, data, None)
    assert cfg is not None and found == []
    violations = validate_config(cfg, offline=False, timeout_s=1.0)
    assert [v.path for v in violations] == ['sink.kafka.properties["ssl.truststore.location"]']


@pytest.mark.parametrize("offline, refused", [(False, True), (False, False), (True, False)])
def test_validate_reads_the_client_settings_once(tmp_path, monkeypatch, offline, refused):
    """validate runs the client settings' rule once per cluster (it reads keystore files): its
    result decides whether the clusters are asked, and the rules reuse it."""
    from kafka_eos.config import live, rules
    from kafka_eos.config.validate import validate_config
    from tests.factories import load
    calls: list[dict] = []

    def counted(conf, control_plane=False):
        calls.append(dict(conf))
        return check_client_settings(conf, control_plane)
    monkeypatch.setattr(rules, "check_client_settings", counted)
    monkeypatch.setattr(live, "live_context", lambda cfg, timeout_s: (Context(), []))
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 32)
    data = valid(tmp_path)
    if refused:
        with_sink(**{"ssl.truststore.location": str(jks)})(data)
    cfg, found = load(tmp_path, data, None)
    assert cfg is not None and found == []
    violations = validate_config(cfg, offline=offline, timeout_s=1.0)
    assert len(calls) == 2  # the source's and the sink's settings, each once
    assert [v.path for v in violations] == (['sink.kafka.properties["ssl.truststore.location"]'] if refused else [])
