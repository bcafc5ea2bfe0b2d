"""Sink options: required settings, refused unsafe ones, secrets never printed."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.txn.protocol.errors import SinkConfigError

BASE = {"kafka.bootstrap.servers": "b:9092", "transactional.id.prefix": "q1", "checkpointLocation": "/ck"}


def test_defaults_and_log_beside_checkpoint():
    cfg = sink_config(BASE)
    assert cfg.log_location == "/ck/kafka-eos-sink" and cfg.producer_conf["bootstrap.servers"] == "b:9092"
    settings = cfg.producer_settings("q1-0-0")
    assert settings["enable.idempotence"] == "true" and settings["acks"] == "all"


@pytest.mark.parametrize("extra,needle", [
    ({"kafka.acks": "1"}, "kafka.acks=1"),
    ({"kafka.enable.idempotence": "false"}, "enable.idempotence=false"),
    ({"kafka.transactional.id": "x"}, "transactional.id.prefix"),
    ({"transactional.id.prefix": ""}, "transactional.id.prefix is required"),
    ({"kafka.transaction.timeout.ms": "soon"}, "kafka.transaction.timeout.ms='soon'"),
])
def test_unsafe_or_missing_settings_are_named(extra, needle):
    with pytest.raises(SinkConfigError, match=needle.replace(".", r"\.").replace("'", ".")):
        sink_config({**BASE, **extra})


def test_missing_checkpoint_is_explained():
    options = {k: v for k, v in BASE.items() if k != "checkpointLocation"}
    with pytest.raises(SinkConfigError, match="checkpointLocation"):
        sink_config(options)


def test_secrets_never_in_repr():
    cfg = sink_config({**BASE, "kafka.sasl.password": "hunter2", "kafka.sasl.username": "svc"})
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg) and "svc" in repr(cfg)


def test_at_least_once_producers_have_no_transaction():
    cfg = sink_config({**BASE, "guarantee": "at_least_once"})
    settings = cfg.producer_settings("q1-0-0")
    assert "transactional.id" not in settings and settings["acks"] == "all"
    with pytest.raises(SinkConfigError, match="guarantee='maybe'"):
        sink_config({**BASE, "guarantee": "maybe"})


def test_sink_config_itself_refuses_what_it_would_override():
    from kafka_eos.txn.protocol.sink_config import SinkConfig, producer_violations
    conf = {"bootstrap.servers": "b:9092", "acks": "1", "enable.idempotence": "false", "transactional.id": "t",
            "transaction.timeout.ms": "5", "isolation.level": "read_committed", "request.required.acks": "0"}
    found = {v.key: v for v in producer_violations(conf)}
    assert set(found) == set(conf) - {"bootstrap.servers"}
    assert (found["acks"].found, found["acks"].required) == ("1", "all")
    assert found["transactional.id"].replaced_by == "transactional_id_prefix"
    with pytest.raises(SinkConfigError, match="acks=1"):
        SinkConfig(producer_conf={"bootstrap.servers": "b:9092", "acks": "1"}, transactional_id_prefix="p",
                   log_location="/ck")
    safe = {"bootstrap.servers": "b:9092", "acks": "-1", "enable.idempotence": "TRUE"}
    assert producer_violations(safe) == []


def test_every_unsafe_setting_is_named_at_once():
    with pytest.raises(SinkConfigError) as err:
        sink_config({**BASE, "kafka.acks": "0", "kafka.request.required.acks": "1", "kafka.isolation.level": "x"})
    assert all(n in str(err.value) for n in ("kafka.acks=0", "kafka.request.required.acks=1", "kafka.isolation.level"))


def test_fixed_partitions_option_is_a_bool_named_when_wrong():
    base = {"kafka.bootstrap.servers": "b:9092", "transactional.id.prefix": "p", "checkpointLocation": "/tmp/ck"}
    assert sink_config({**base, "fixedPartitions": "TRUE"}).fixed_partitions is True
    with pytest.raises(SinkConfigError, match="fixedPartitions='yes'"):
        sink_config({**base, "fixedPartitions": "yes"})


def test_a_user_setting_a_test_hook_is_refused_naming_the_option(monkeypatch):
    from kafka_eos.config.spark_option import TEST_HOOKS_ENV
    from kafka_eos.connectors.sink.options import fault_plan
    monkeypatch.delenv(TEST_HOOKS_ENV, raising=False)
    hooked = {**BASE, "FaultInjection": "after_decision@1", "faultInjectionDir": "/tmp/f"}
    for parse in (sink_config, fault_plan):
        with pytest.raises(SinkConfigError, match=f"sink options faultInjection, faultInjectionDir are test hooks.*{TEST_HOOKS_ENV}=1"):
            parse(hooked)
    with pytest.raises(SinkConfigError, match="sink option faultInjection is a test hook"):
        fault_plan({**BASE, "faultinjection": "task_start"})
    assert not fault_plan(BASE).active and sink_config(BASE).transactional_id_prefix == "q1"
    monkeypatch.setenv(TEST_HOOKS_ENV, "1")
    assert fault_plan(hooked).targets() == (("after_decision", 1),) and fault_plan(hooked).directory == "/tmp/f"
    assert sink_config(hooked).transactional_id_prefix == "q1"


def test_a_kafka_sink_log_location_registers_the_sinks_cluster_and_only_its_connection(monkeypatch):
    from kafka_eos.txn.log import stores
    from tests.store_fakes import FakeWriter, fake_kafka
    for _ in fake_kafka(monkeypatch):
        location = "kafka:_kafka_eos_store-orders-eos/ck-0123/kafka-eos-sink"
        config = sink_config({"kafka.bootstrap.servers": "b:9092", "kafka.sasl.password": "pw-0451",
                              "kafka.linger.ms": "5", "transactional.id.prefix": "orders-eos",
                              "sinkLogLocation": location})
        assert config.log_location == location and "pw-0451" not in repr(config)
        stores.open_store(location)
        [(topic, _, prefix, conf)] = [(t, r, p, c) for t, r, p, c in FakeWriter.opened]
        assert (topic, prefix) == ("_kafka_eos_store-orders-eos", "orders-eos")
        assert conf["bootstrap.servers"] == "b:9092" and conf["sasl.password"] == "pw-0451" and "linger.ms" not in conf
