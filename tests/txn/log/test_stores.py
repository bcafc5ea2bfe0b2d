"""The factory of record stores (``txn/log/stores.py``): a file location opens the file store, a
``kafka:`` one the Kafka store of its registered cluster, one writer per topic and role per
process, and no setting ever in a location or an error. Clients are stand-ins (no broker)."""
from __future__ import annotations

import pytest

from kafka_eos.txn.log import stores
from kafka_eos.txn.log.kafka_store import KafkaStore, StoreRole, store_topic
from kafka_eos.txn.log.log_store import LogReader, LogStore
from kafka_eos.txn.log.sink_log import BatchRecord, SinkLog, SinkLogReader
from kafka_eos.txn.protocol.errors import SinkLogError
from kafka_eos.txn.protocol.states import BatchState
from tests.store_fakes import FakeWriter, fake_kafka

SECRET = "s3cr3t-pass"
CONF = {"bootstrap.servers": "b:9092", "sasl.password": SECRET, "linger.ms": "5"}


@pytest.fixture
def kafka(monkeypatch):
    yield from fake_kafka(monkeypatch)


def test_a_file_location_opens_the_file_store(tmp_path):
    assert type(stores.open_reader(str(tmp_path / "r"))) is LogReader
    assert type(stores.open_store(str(tmp_path / "s"))) is LogStore and (tmp_path / "s").is_dir()
    stores.register(str(tmp_path), CONF, "p")  # not a Kafka location: nothing kept
    assert stores.parse_kafka(str(tmp_path)) is None


def test_a_kafka_location_names_its_topic_and_folder_and_nothing_else():
    root = stores.kafka_records_root("orders", "/ck/orders/")
    assert root == stores.kafka_records_root("orders", "/ck/orders")
    assert root.startswith(f"kafka:{store_topic('orders')}/ck-") and len(root.rsplit("-", 1)[1]) == 16
    found = stores.parse_kafka(root + "/kafka-eos-sink")
    assert found is not None and found.topic == store_topic("orders") and found.folder.endswith("/kafka-eos-sink")
    assert stores.kafka_records_root("orders", "/other") != root


def test_an_unregistered_topic_is_refused_by_name_not_guessed(kafka):
    with pytest.raises(SinkLogError, match="no Kafka cluster is known in this process for the record store topic 't'"):
        stores.open_reader("kafka:t/ck/kafka-eos-sink")
    assert FakeWriter.opened == []


def test_one_writer_per_topic_and_role_and_only_connection_settings(kafka):
    stores.register("kafka:t/ck", CONF, "p")
    first = stores.open_store("kafka:t/ck/kafka-eos-sink")
    again = stores.open_store("kafka:t/ck/kafka-eos-sink/_segments")
    follower = stores.open_store("kafka:t/ck/kafka-eos-sink", StoreRole.FOLLOWER)
    assert isinstance(first, KafkaStore) and first.writer is again.writer and follower.writer is not first.writer
    assert [(t, r, p) for t, r, p, _ in FakeWriter.opened] == [("t", StoreRole.OPERATOR, "p"),
                                                               ("t", StoreRole.FOLLOWER, "p")]
    assert "linger.ms" not in FakeWriter.opened[0][3] and FakeWriter.opened[0][3]["bootstrap.servers"] == "b:9092"
    stores.use_role(StoreRole.DRIVER)
    assert stores.open_store("kafka:t/ck").writer.role is StoreRole.DRIVER
    assert SECRET not in first.location + repr(stores.parse_kafka(first.location))


def test_the_sink_log_reads_and_writes_through_the_kafka_store(kafka):
    location = "kafka:t/ck-1/kafka-eos-sink"
    stores.register(location, CONF, "p")
    log = SinkLog(location, "p", "query-1")
    log.append(BatchRecord(0, BatchState.DECIDED, 1, ()), None)
    reader = SinkLogReader(location)
    assert reader.meta() == {"v": 2, "prefix": "p", "query_id": "query-1"} and reader.batch_ids() == [0]
    assert sorted(kafka.live_keys()) == ["ck-1/kafka-eos-sink/0.0.json", "ck-1/kafka-eos-sink/_meta.json"]
    assert reader.store.child("_segments").location == "kafka:t/ck-1/kafka-eos-sink/_segments"
