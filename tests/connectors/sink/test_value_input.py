"""A sink task's emit=valueRefs input: the referenced values, read forward once per partition, and
the refusals (a record gone, rows reordered, options that do not say valueRefs)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from confluent_kafka import Message

from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.sink import value_input
from kafka_eos.connectors.sink.range_input import read_options, task_rows
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.connectors.source.value_refs import ValueRef, ValueRefError, ref_column
from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.protocol.sink_config import SinkConfig

CLUSTER = "k1:9092"
SOURCE = {"source.kafka.bootstrap.servers": CLUSTER, "source.subscribe": "in", "source.emit": "valueRefs"}


def _chunks(offsets: list[int], per: int = 2) -> list[list[Message]]:
    messages = [Message(topic="in", partition=0, offset=o, value=b"v%d" % o) for o in offsets]
    return [messages[i:i + per] for i in range(0, len(messages), per)]


def test_values_are_served_in_order_skipping_records_the_query_filtered_out():
    values = value_input._PartitionValues(iter(_chunks([3, 4, 6, 7, 8, 9])), count=4)  # 5: a transaction marker
    assert [values.value_at(ValueRef("in", 0, o)) for o in (3, 6, 6, 9)] == [b"v3", b"v6", b"v6", b"v9"]


def test_a_record_the_read_does_not_return_fails_the_task_naming_it():
    values = value_input._PartitionValues(iter(_chunks([3, 5])), count=3)
    with pytest.raises(ValueRefError, match="record in-0@4 is no longer in Kafka"):
        [values.value_at(ValueRef("in", 0, o)) for o in (3, 4)]
    with pytest.raises(ValueRefError, match="record in-0@9 is no longer in Kafka"):
        value_input._PartitionValues(iter(_chunks([3, 5])), count=1).value_at(ValueRef("in", 0, 9))


def test_rows_reordered_between_source_and_sink_fail_the_task():
    values = value_input._PartitionValues(iter(_chunks([3, 4, 5])), count=2)
    values.value_at(ValueRef("in", 0, 5))
    with pytest.raises(ValueRefError, match="in-0@3 reaches the sink after offset 5.*reordered"):
        values.value_at(ValueRef("in", 0, 3))


def test_the_task_rows_get_their_values_with_every_other_column_as_the_query_made_it(monkeypatch):
    options = parse_source_options({k.removeprefix("source."): v for k, v in SOURCE.items()}, streaming=True)
    read = {}

    def read_messages(ranges, given):
        [rng] = ranges
        read[(rng.topic, rng.partition)] = (rng.start, rng.end)
        return iter([[Message(topic=rng.topic, partition=rng.partition, offset=o, value=b"%s-%d" % (rng.topic.encode(), o))
                      for o in range(rng.start, rng.end)]])

    monkeypatch.setattr(value_input, "read_messages", read_messages)
    refs = pa.concat_arrays([ref_column("a", 0, np.array([2, 5]), CLUSTER), ref_column("b", 1, np.array([7]), CLUSTER)])
    batch = pa.RecordBatch.from_pydict({"key": pa.array([b"x", b"y", b"z"]), "value": refs,
                                        "topic": pa.array(["out1", "out2", "out1"])})
    [out] = task_rows(iter([batch]), options)
    assert out.column("value").to_pylist() == [b"a-2", b"a-5", b"b-7"]
    assert out.drop_columns(["value"]).equals(batch.drop_columns(["value"]))
    assert read == {("a", 0): (2, 6), ("b", 1): (7, 8)}, "each partition read once, first to last reference"


def _config() -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "k2:9092"}, transactional_id_prefix="p",
                      log_location="/tmp/unused", topic=None)


def test_the_sink_takes_value_references_only_when_the_source_options_say_so():
    options = read_options(SOURCE, source_schema(), _config())
    assert options is not None and options.emit_value_refs
    assert options.consumer_conf()["isolation.level"] == "read_committed"
    with pytest.raises(SinkConfigError, match="emit=offsetRanges.*or emit=valueRefs"):
        read_options({**SOURCE, "source.emit": "records"}, source_schema(), _config())
