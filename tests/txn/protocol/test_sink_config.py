"""SinkConfig's producer settings: Java clients' partitioner, every broker at once, librdkafka accepts them."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.sink_config import SinkConfig


def _config(tmp_path) -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                      log_location=str(tmp_path / "log"), topic="t")


def test_the_producer_partitions_keys_like_java_clients_unless_the_user_says_otherwise(tmp_path):
    assert _config(tmp_path).producer_settings("p-0-0")["partitioner"] == "murmur2_random"
    mine = SinkConfig(producer_conf={"bootstrap.servers": "unused:1", "partitioner": "consistent_random"},
                      transactional_id_prefix="p", log_location=str(tmp_path / "log"), topic="t")
    assert mine.producer_settings("p-0-0")["partitioner"] == "consistent_random"


def test_the_producer_connects_to_every_broker_at_once_unless_the_user_says_otherwise(tmp_path):
    # sparse connections made init_transactions wait for librdkafka's 500 ms coordinator timer
    assert _config(tmp_path).producer_settings("p-0-0")["enable.sparse.connections"] == "false"
    mine = SinkConfig(producer_conf={"bootstrap.servers": "unused:1", "enable.sparse.connections": "true"},
                      transactional_id_prefix="p", log_location=str(tmp_path / "log"), topic="t")
    assert mine.producer_settings("p-0-0")["enable.sparse.connections"] == "true"


@pytest.mark.parametrize("timeout_ms", [10_000, 12_000, 900_000])
def test_librdkafka_accepts_the_producer_settings_of_a_short_transaction_timeout(tmp_path, timeout_ms):
    # librdkafka refuses socket.timeout.ms > transaction.timeout.ms + 100 when it builds the producer
    from confluent_kafka import Producer
    config = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                        log_location=str(tmp_path / "log"), topic="t", transaction_timeout_ms=timeout_ms)
    settings = config.producer_settings("p-0-0")
    assert int(settings["socket.timeout.ms"]) <= timeout_ms
    Producer(settings)  # raises KafkaException(_INVALID_ARG) for a setting librdkafka refuses
