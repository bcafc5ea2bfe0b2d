"""YAML -> PipelineConfig: interpolation, types, did-you-mean, versions, schema files."""
from __future__ import annotations

import json

import pytest

from kafka_eos.config.loader import load_file, load_text
from kafka_eos.config.model import DataFormat, Guarantee, OnDecodeError, Secret
from tests.factories import ORDER_SCHEMA, load, paths, valid, write


def test_valid_file_builds_the_frozen_model(tmp_path):
    cfg, found = load(tmp_path, valid(tmp_path))
    assert found == []
    assert cfg.source.topics == ("in",) and cfg.source.format is DataFormat.JSON
    assert cfg.guarantee is Guarantee.EXACTLY_ONCE and cfg.errors.on_decode_error is OnDecodeError.DLQ
    assert cfg.checkpoint.trigger.interval_ms == 10_000 and json.loads(cfg.source.schema.text) == ORDER_SCHEMA
    with pytest.raises(AttributeError):
        cfg.sink.topic = "other"  # type: ignore[misc]


def test_env_interpolation_with_defaults_and_literal(tmp_path):
    data = valid(tmp_path)
    data["source"]["kafka"]["bootstrap_servers"] = "${BROKERS}"
    data["sink"]["kafka"]["bootstrap_servers"] = "${SINK_BROKERS:-sink:9092}"
    data["sink"]["topic"] = "out-$${literal}"
    data["source"]["max_offsets_per_trigger"] = "${MAX:-500}"
    cfg, found = load(tmp_path, data, env={"BROKERS": "a:1,b:2"})
    assert found == []
    assert cfg.source.kafka.bootstrap_servers == "a:1,b:2" and cfg.sink.kafka.bootstrap_servers == "sink:9092"
    assert cfg.sink.topic == "out-${literal}" and cfg.source.max_offsets_per_trigger == 500


def test_missing_variable_names_the_path_and_the_variable(tmp_path):
    data = valid(tmp_path)
    data["sink"]["kafka"]["properties"] = {"sasl.password": "${KAFKA_PASSWORD}"}
    data["checkpoint"]["location"] = "${CKPT_ROOT}/x"
    cfg, found = load(tmp_path, data)
    by_path = {v.path: v for v in found}
    assert set(by_path) == {'sink.kafka.properties["sasl.password"]', "checkpoint.location"}
    password = by_path['sink.kafka.properties["sasl.password"]']
    assert "KAFKA_PASSWORD" in password.message and "${KAFKA_PASSWORD:-" in password.fix
    assert "CKPT_ROOT" in by_path["checkpoint.location"].message


def test_malformed_reference_is_reported(tmp_path):
    data = valid(tmp_path)
    data["sink"]["topic"] = "out-${not closed"
    _, found = load(tmp_path, data)
    assert paths(found) == ["sink.topic"] and "malformed" in found[0].message


def test_secrets_become_secret_values(tmp_path):
    data = valid(tmp_path)
    data["source"]["kafka"]["properties"] = {"sasl.password": "pw-1", "ssl.key.pem": "KEY", "client.id": "c"}
    data["sink"]["topic"] = "${TOPIC_TOKEN}"
    cfg, _ = load(tmp_path, data, env={"TOPIC_TOKEN": "tok-9"})
    props = dict(cfg.source.kafka.properties)
    assert isinstance(props["sasl.password"], Secret) and isinstance(props["ssl.key.pem"], Secret)
    assert props["client.id"] == "c"
    assert {s.reveal() for s in cfg.secrets()} == {"pw-1", "KEY", "tok-9"}
    assert "pw-1" not in repr(cfg) and "KEY" not in str(cfg)


def test_unknown_keys_everywhere_get_did_you_mean(tmp_path):
    data = valid(tmp_path)
    data["source"]["topcs"] = data["source"].pop("topics")
    data["sink"]["transactional_id_prefx"] = data["sink"].pop("transactional_id_prefix")
    data["checkpoint"]["locaton"] = "x"
    data["zzz_unrelated"] = 1
    _, found = load(tmp_path, data)
    by_path = {v.path: v for v in found}
    assert by_path["source.topcs"].fix == "did you mean 'topics'?"
    assert by_path["sink.transactional_id_prefx"].fix == "did you mean 'transactional_id_prefix'?"
    assert by_path["checkpoint.locaton"].fix == "did you mean 'location'?"
    assert "known keys here" in by_path["zzz_unrelated"].fix


def test_bad_types_and_choices_are_all_reported(tmp_path):
    data = valid(tmp_path)
    data["source"]["max_offsets_per_trigger"] = "lots"
    data["source"]["format"] = "jsn"
    data["guarantee"] = "exactly-once"
    data["checkpoint"]["trigger"] = "soon"
    data["source"]["include_headers"] = "maybe"
    _, found = load(tmp_path, data)
    assert set(paths(found)) == {"source.max_offsets_per_trigger", "source.format", "guarantee",
                                 "checkpoint.trigger", "source.include_headers"}
    assert next(v for v in found if v.path == "source.format").fix == "did you mean 'json'?"


@pytest.mark.parametrize("trigger,available_now,ms", [
    ("available_now", True, 0), ("500 ms", False, 500), ("2 minutes", False, 120_000), (1500, False, 1500)])
def test_triggers(tmp_path, trigger, available_now, ms):
    data = valid(tmp_path)
    data["checkpoint"]["trigger"] = trigger
    cfg, found = load(tmp_path, data)
    assert found == [] and (cfg.checkpoint.trigger.available_now, cfg.checkpoint.trigger.interval_ms) == (available_now, ms)


@pytest.mark.parametrize("trigger", ["real_time", "Real-Time", "realtime"])
def test_real_time_mode_is_refused_with_the_reason(tmp_path, trigger):
    data = valid(tmp_path)
    data["checkpoint"]["trigger"] = trigger
    _, found = load(tmp_path, data)
    assert paths(found) == ["checkpoint.trigger"]
    assert "Real-time Mode" in found[0].message and "at-least-once" in found[0].message
    assert "available_now" in found[0].fix


def test_version_is_required_and_checked(tmp_path):
    data = valid(tmp_path)
    del data["version"]
    cfg, found = load(tmp_path, data)
    assert cfg is not None and paths(found) == ["version"] and "version: 1" in found[0].fix
    data["version"] = 2
    cfg, found = load(tmp_path, data)
    assert cfg is None and "not supported" in found[0].message


def test_yaml_syntax_error_is_a_violation():
    cfg, found = load_text("source: [unclosed", "x.yaml", {})
    assert cfg is None and found[0].file == "x.yaml" and "not valid YAML" in found[0].message


def test_schema_file_is_relative_to_the_pipeline_file(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "o.avsc").write_text(json.dumps(ORDER_SCHEMA))
    (tmp_path / "pipelines").mkdir()
    data = valid(tmp_path)
    data["source"]["schema"] = {"file": "../schemas/o.avsc"}
    cfg, found = load_file(write(tmp_path / "pipelines", "p.yaml", data), env={})
    assert found == [] and cfg.source.schema.file == str(tmp_path / "schemas" / "o.avsc")
    data["source"]["schema"] = {"file": "../schemas/missing.avsc"}
    _, found = load_file(write(tmp_path / "pipelines", "p.yaml", data), env={})
    assert paths(found) == ["source.schema.file"] and "missing.avsc" in found[0].message


def test_steps_and_watermark(tmp_path):
    data = valid(tmp_path)
    data["transform"] = {"steps": [{"filter": "value.amount > 0"}, {"select": ["value.id AS id", "value"]},
                                   {"key": "CAST(id AS STRING)"}, {"filtr": "x"}],
                         "watermark": {"column": "t", "expression": "value.ts", "delay": "10 minutes"}}
    cfg, found = load(tmp_path, data)
    assert [s.kind for s in cfg.transform.steps] == ["filter", "select", "key"]
    assert cfg.transform.steps[1].exprs == ("value.id AS id", "value")
    assert cfg.transform.watermark.delay_ms == 600_000
    assert paths(found) == ["transform.steps[3].filtr"] and found[0].fix == "did you mean 'filter'?"


def test_client_settings_keep_yaml_booleans_lowercase(tmp_path):
    data = valid(tmp_path)
    data["sink"]["kafka"]["properties"] = {"enable.idempotence": True, "linger.ms": 5}
    cfg, _ = load(tmp_path, data)
    assert cfg.sink.kafka.get("enable.idempotence") == "true" and cfg.sink.kafka.get("linger.ms") == "5"


def test_readme_documents_every_key_the_loader_reads():
    from pathlib import Path
    import re
    root = Path(__file__).resolve().parents[2] / "config"
    keys = set(re.findall(r'\b(?:s|top)\.(?:str|int|bool|raw|choice|str_list|mapping|section|optional_section|'
                          r'duration_ms)\("(\w+)"',
                          "".join((root / name).read_text() for name in ("loader.py", "transform_loader.py"))))
    assert {"transactional_id_prefix", "on_decode_error", "basic_auth_user_info", "watermark"} <= keys
    readme = (root / "README.md").read_text()
    undocumented = {k for k in keys if not re.search(rf"`(?:[\w.]+\.)?{k}(?:\.[\w.]+)?`", readme)}
    assert not undocumented, f"config/README.md does not document: {sorted(undocumented)}"


def test_source_align_durations_and_defaults(tmp_path):
    data = valid(tmp_path)
    data["source"]["align"] = {"max_drift": "30 seconds"}
    cfg, found = load(tmp_path, data)
    assert found == [] and (cfg.source.align.max_drift_ms, cfg.source.align.idle_timeout_ms) == (30_000, 30_000)
    data["source"]["align"] = {"max_drift": "2 minutes", "idle_timeout": "5s"}
    cfg, _ = load(tmp_path, data)
    assert (cfg.source.align.max_drift_ms, cfg.source.align.idle_timeout_ms) == (120_000, 5_000)
    data["source"]["align"] = {"idle_timeout": "soon", "max_drif": 1}
    cfg, found = load(tmp_path, data)
    assert cfg.source.align is None
    assert set(paths(found)) == {"source.align.idle_timeout", "source.align.max_drif", "source.align.max_drift"}


def test_metrics_key_with_defaults_port_and_host(tmp_path):
    from kafka_eos.config.model import DEFAULT_METRICS_HOST, DEFAULT_METRICS_PORT, MetricsSpec
    cfg, found = load(tmp_path, valid(tmp_path))
    assert found == [] and cfg.metrics is None, "no key, no endpoint"
    for given, expected in (({"port": 9500, "host": "0.0.0.0"}, MetricsSpec(9500, "0.0.0.0")),
                            ({"port": "${METRICS_PORT:-9600}"}, MetricsSpec(9600, DEFAULT_METRICS_HOST)),
                            ({}, MetricsSpec(DEFAULT_METRICS_PORT, DEFAULT_METRICS_HOST)),
                            (None, MetricsSpec(DEFAULT_METRICS_PORT, DEFAULT_METRICS_HOST))):
        data = valid(tmp_path)
        data["metrics"] = given
        cfg, found = load(tmp_path, data)
        assert found == [] and cfg.metrics == expected, (given, found)
    assert (DEFAULT_METRICS_PORT, DEFAULT_METRICS_HOST) == (9464, "127.0.0.1")
    assert MetricsSpec(9464, "::1").url == "http://[::1]:9464/metrics"


def test_metrics_unknown_keys_and_bad_types_name_the_key_and_the_fix(tmp_path):
    data = valid(tmp_path)
    data["metrics"] = {"prot": 9464, "hots": "x", "path": "/m"}
    _, found = load(tmp_path, data)
    by_path = {v.path: v for v in found}
    assert by_path["metrics.prot"].fix == "did you mean 'port'?"
    assert by_path["metrics.hots"].fix == "did you mean 'host'?"
    assert by_path["metrics.path"].fix == "remove it; known keys here: basic_auth_user_info, host, port, sample_interval_s, tls_cert_file, tls_key_file"
    data["metrics"] = {"port": "high", "host": {"a": 1}}
    _, found = load(tmp_path, data)
    by_path = {v.path: v for v in found}
    assert set(by_path) == {"metrics.port", "metrics.host"}
    assert "whole number" in by_path["metrics.port"].message and "port: 10000" in by_path["metrics.port"].fix
    data["metrics"] = "9464"
    _, found = load(tmp_path, data)
    assert [v.path for v in found] == ["metrics"] and "mapping" in found[0].message


def test_top_level_unknown_keys_know_metrics(tmp_path):
    data = valid(tmp_path)
    data["metric"] = {"port": 1}
    data["zzz"] = 1
    _, found = load(tmp_path, data)
    by_path = {v.path: v for v in found}
    assert by_path["metric"].fix == "did you mean 'metrics'?"
    assert "metrics" in by_path["zzz"].fix.split("known keys here: ")[1].split(", ")
