"""``checkpoint.records`` (config/records.py): where the sink log is for each value, the sink option
it sets, the conflict with ``sink.options.sinkLogLocation``, and validate's probe of a Kafka store
(an ACL refused: exit 3 naming the ACLs; no setting in any text)."""
from __future__ import annotations

from dataclasses import replace

from kafka_eos.config import store_check
from kafka_eos.config.model import Records
from kafka_eos.config.rules import check
from kafka_eos.config.records import kafka_sink_log, register_records, sink_log_location
from kafka_eos.config.violations import INVALID, UNAUTHORIZED
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.txn.log import stores
from kafka_eos.txn.log.kafka_store import store_topic
from kafka_eos.txn.log.store_probe import StoreUnusable
from tests.factories import load, valid


def _cfg(tmp_path, records: str | None = None, **sink_options):
    data = valid(tmp_path)
    if records is not None:
        data["checkpoint"]["records"] = records
    if sink_options:
        data["sink"]["options"] = sink_options
    return load(tmp_path, data)


def test_unset_keeps_the_records_at_the_checkpoint(tmp_path):
    cfg, found = _cfg(tmp_path)
    assert found == [] and cfg.checkpoint.records is Records.CHECKPOINT and kafka_sink_log(cfg) is None
    assert sink_log_location(cfg) == ("checkpoint.location", f"{cfg.checkpoint.location}/kafka-eos-sink")
    assert "sinkLogLocation" not in sink_options(cfg)


def test_kafka_sets_the_sink_log_location_to_the_store_topic_of_the_prefix(tmp_path):
    cfg, found = _cfg(tmp_path, "kafka")
    assert found == []
    location = sink_options(cfg)["sinkLogLocation"]
    prefix = cfg.sink.transactional_id_prefix
    assert location.startswith(f"kafka:{store_topic(prefix)}/ck-") and location.endswith("/kafka-eos-sink")
    assert sink_log_location(cfg) == ("checkpoint.records", location)


def test_kafka_and_a_sink_log_location_option_are_refused_together(tmp_path):
    cfg, _ = _cfg(tmp_path, "kafka", sinkLogLocation=str(tmp_path / "log"))
    found = [v for v in check(cfg) if v.path == "checkpoint.records"]
    assert [v.path for v in found] == ["checkpoint.records"] and "drop sink.options.sinkLogLocation" in found[0].fix


def test_kafka_on_a_checkpoint_whose_sink_log_is_in_files_is_refused(tmp_path):
    cfg, _ = _cfg(tmp_path, "kafka")
    log = tmp_path / "ck" / "kafka-eos-sink"
    cfg = replace(cfg, checkpoint=replace(cfg.checkpoint, location=str(tmp_path / "ck")))
    assert [v for v in check(cfg) if v.path == "checkpoint.records"] == []
    log.mkdir(parents=True)
    (log / "_meta.json").write_text("{}")
    [found] = [v for v in check(cfg) if v.path == "checkpoint.records"]
    assert "keeps its sink log in files" in found.message and "drop checkpoint.records" in found.fix


def test_another_value_is_refused(tmp_path):
    _, found = _cfg(tmp_path, "s3")
    assert [v.path for v in found] == ["checkpoint.records"]


def test_a_store_whose_broker_refused_an_acl_is_unauthorized_naming_the_acls(tmp_path, monkeypatch):
    cfg, _ = _cfg(tmp_path, "kafka")
    location = kafka_sink_log(cfg)
    register_records(cfg)
    advice = stores.acl_advice(location)

    def refused(where):
        raise StoreUnusable(where, "creating the location", "KafkaException: TOPIC_AUTHORIZATION_FAILED", advice)
    monkeypatch.setattr(store_check, "probe_store", refused)
    [violation], probe = store_check.store_problems(cfg)
    assert probe is None and violation.kind == UNAUTHORIZED and violation.path == "checkpoint.records"
    assert f"Write on topic {store_topic(cfg.sink.transactional_id_prefix)}" in violation.fix.replace(
        "Create, Describe, Read and Write", "Write")
    assert f"TransactionalId {cfg.sink.transactional_id_prefix}-store-*" in violation.fix

    def unanswered(where):
        raise StoreUnusable(where, "creating the location", "KafkaException: _TRANSPORT")
    monkeypatch.setattr(store_check, "probe_store", unanswered)
    [violation], _ = store_check.store_problems(cfg)
    assert violation.kind == INVALID and "sink.kafka" in violation.fix
