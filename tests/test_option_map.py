"""The one case-insensitive option lookup: keys in any case, values as given, names of secrets only in repr."""
from __future__ import annotations

from kafka_eos.option_map import OptionMap


def test_lookup_ignores_the_case_of_keys_and_keeps_values():
    options = OptionMap({"checkpointLocation": "/ck/A", "KAFKA.Bootstrap.Servers": "b:9092"})
    assert options["checkpointlocation"] == options.get("CHECKPOINTLOCATION") == "/ck/A"
    assert "checkPointLocation" in options and "sinkLogLocation" not in options
    assert sorted(options) == ["checkpointlocation", "kafka.bootstrap.servers"]
    assert OptionMap.of(options) is options


def test_later_key_wins_as_in_spark_and_prefixed_options_lose_the_prefix():
    options = OptionMap({"topic": "a", "TOPIC": "b", "kafka.acks": "all", "kafka.sasl.password": "hunter2"})
    assert options["topic"] == "b" and len(options) == 3
    assert options.with_prefix("kafka.") == {"acks": "all", "sasl.password": "hunter2"}
    assert "hunter2" not in repr(options)
