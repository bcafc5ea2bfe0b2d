"""PipelineConfig -> Spark option maps (Spark's Kafka names; accepted by the kafka-eos connectors)."""
from __future__ import annotations

import json

from kafka_eos.connectors.pipeline.spark_options import sink_options, sink_select_exprs, source_options, trigger_kwargs
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.source.options import parse_source_options
from tests.factories import load, valid


def cfg_of(tmp_path, change=lambda d: None):
    data = valid(tmp_path)
    change(data)
    cfg, found = load(tmp_path, data)
    assert found == []
    return cfg


def test_source_options_use_spark_names(tmp_path):
    def change(d):
        d["source"].update(max_offsets_per_trigger=500, include_headers=True, options={"failOnDataLoss": "false"})
        d["source"]["kafka"]["properties"] = {"sasl.password": "pw", "security.protocol": "SASL_SSL"}
    options = source_options(cfg_of(tmp_path, change))
    assert options == {"kafka.bootstrap.servers": "localhost:9092", "kafka.sasl.password": "pw",
                       "kafka.security.protocol": "SASL_SSL", "kafka.isolation.level": "read_committed",
                       "subscribe": "in", "startingOffsets": "earliest", "maxOffsetsPerTrigger": "500",
                       "includeHeaders": "true", "failOnDataLoss": "false"}
    parsed = parse_source_options(options, streaming=True)
    assert parsed.max_offsets_per_trigger == 500 and parsed.kafka_conf["sasl.password"] == "pw"


def test_pattern_assign_and_json_offsets(tmp_path):
    def pattern(d):
        d["source"].pop("topics")
        d["source"]["pattern"] = "in-.*"
    assert source_options(cfg_of(tmp_path, pattern))["subscribePattern"] == "in-.*"

    def assign(d):
        d["source"].pop("topics")
        d["source"]["assign"] = {"in": [0, 2]}
        d["source"]["starting_offsets"] = {"in": {"0": 5, "2": -2}}
    options = source_options(cfg_of(tmp_path, assign))
    assert json.loads(options["assign"]) == {"in": [0, 2]}
    assert json.loads(options["startingOffsets"]) == {"in": {"0": 5, "2": -2}}


def test_sink_options_and_dlq_topic_routing(tmp_path):
    cfg = cfg_of(tmp_path)
    options = sink_options(cfg)
    assert "topic" not in options     # DLQ: every row carries its topic
    assert options["transactional.id.prefix"] == "t-eos" and options["kafka.transaction.timeout.ms"] == "300000"
    assert options["trigger.interval.ms"] == "10000" and options["checkpointLocation"] == str(tmp_path / "ckpt")
    assert sink_select_exprs(cfg) == ["`key` AS key", "`value` AS value", "'out' AS topic"]
    parsed = sink_config(options)
    assert parsed.transaction_timeout_ms == 300_000 and parsed.trigger_interval_ms == 10_000 and parsed.topic is None

    no_dlq = cfg_of(tmp_path, lambda d: d["errors"].update(on_decode_error="fail", dlq_topic=None))
    assert sink_options(no_dlq)["topic"] == "out" and sink_select_exprs(no_dlq) == ["`key` AS key", "`value` AS value"]


def test_custom_columns_are_quoted(tmp_path):
    def change(d):
        d["errors"] = {"on_decode_error": "fail"}
        d["sink"].update(key_column="order id", value_column="payload", headers_column="hs", topic=None,
                         topic_column="dest")
    assert sink_select_exprs(cfg_of(tmp_path, change)) == [
        "`order id` AS key", "`payload` AS value", "`dest` AS topic", "`hs` AS headers"]


def test_a_partition_column_becomes_the_sinks_partition_as_an_int(tmp_path):
    cfg = cfg_of(tmp_path, lambda d: d["sink"].update(partition_column="shard no"))
    assert sink_select_exprs(cfg)[-1] == "CAST(`shard no` AS INT) AS partition"
    assert not [e for e in sink_select_exprs(cfg_of(tmp_path)) if "partition" in e]


def test_trigger_kwargs(tmp_path):
    assert trigger_kwargs(cfg_of(tmp_path)) == {"processingTime": "10000 milliseconds"}
    now = cfg_of(tmp_path, lambda d: d["checkpoint"].update(trigger="available_now"))
    assert trigger_kwargs(now) == {"availableNow": True} and sink_options(now)["trigger.interval.ms"] == "0"


def test_source_align_maps_to_alignment_options(tmp_path):
    assert "alignMaxDriftMs" not in source_options(cfg_of(tmp_path))
    options = source_options(cfg_of(tmp_path, lambda d: d["source"].update(align={"max_drift": "30 seconds"})))
    assert (options["alignMaxDriftMs"], options["alignIdleTimeoutMs"]) == ("30000", "30000")
    parsed = parse_source_options(options, streaming=True)
    assert (parsed.align_max_drift_ms, parsed.align_idle_timeout_ms) == (30_000, 30_000)


def test_fixed_partitions_maps_from_yaml_to_the_sink_option(tmp_path):
    assert sink_config(sink_options(cfg_of(tmp_path))).fixed_partitions is False

    def fixed(d):
        d["sink"]["fixed_partitions"] = True
    options = sink_options(cfg_of(tmp_path, fixed))
    assert options["fixedPartitions"] == "true" and sink_config(options).fixed_partitions is True


def test_a_fixed_partitions_that_is_not_a_bool_is_refused_at_its_yaml_path(tmp_path):
    data = valid(tmp_path)
    data["sink"]["fixed_partitions"] = "sometimes"
    _, found = load(tmp_path, data)
    assert [v.path for v in found] == ["sink.fixed_partitions"]
