"""Offset-range input: the sink needs the source's options (``source.*``) and its topic option."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.schema import RANGE_SCHEMA, source_schema
from kafka_eos.connectors.sink.range_input import read_options
from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.protocol.sink_config import SinkConfig

SOURCE = {"source.kafka.bootstrap.servers": "k1:9092", "source.subscribe": "in", "source.includeHeaders": "true",
          "source.kafka.sasl.password": "hunter2"}


def _config(topic: str | None = "out") -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "k2:9092"}, transactional_id_prefix="p",
                      log_location="/tmp/unused", topic=topic)


def test_record_input_needs_no_source_options():
    assert read_options({"topic": "out"}, source_schema(), _config()) is None


def test_source_options_without_range_input_are_refused():
    with pytest.raises(SinkConfigError, match="source.kafka.bootstrap.servers.*emit=offsetRanges"):
        read_options(SOURCE, source_schema(), _config())


def test_range_input_without_source_options_is_refused_naming_the_fix():
    with pytest.raises(SinkConfigError, match="each prefixed 'source.'"):
        read_options({"topic": "out"}, RANGE_SCHEMA, _config())


def test_range_input_needs_the_topic_option():
    with pytest.raises(SinkConfigError, match="set the sink option 'topic'"):
        read_options(SOURCE, RANGE_SCHEMA, _config(topic=None))


def test_the_source_options_are_read_by_the_sources_rules():
    options = read_options(SOURCE, RANGE_SCHEMA, _config())
    assert options is not None and options.include_headers
    assert options.consumer_conf()["isolation.level"] == "read_committed"
    assert options.kafka_conf["bootstrap.servers"] == "k1:9092"
    with pytest.raises(SinkConfigError, match="source.*isolation.level=read_uncommitted") as refused:
        read_options({**SOURCE, "source.kafka.isolation.level": "read_uncommitted"}, RANGE_SCHEMA, _config())
    assert "hunter2" not in str(refused.value)


def test_a_copied_record_keeps_its_source_timestamp_of_either_type():
    from confluent_kafka import (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE,
                                 Message)

    from kafka_eos.connectors.sink.range_input import _records
    messages = [Message(value=b"a", timestamp=(TIMESTAMP_CREATE_TIME, 1_000)),
                Message(value=b"b", timestamp=(TIMESTAMP_LOG_APPEND_TIME, 2_000)),
                Message(value=b"c", timestamp=(TIMESTAMP_NOT_AVAILABLE, -1))]
    assert _records(messages, include_headers=False).timestamps == [1_000, 2_000, None]
