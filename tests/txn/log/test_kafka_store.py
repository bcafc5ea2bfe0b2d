"""The Kafka record store's own logic, without a broker: keys and folders, the index of live
records, the writer roles' ids, which settings reach its clients, and the create-only decisions
of ``KafkaStore`` (its writer and view are stand-ins here; integration_tests/sink/test_store_kafka.py
runs it on a broker)."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_eos.txn.log.kafka_index import RecordIndex, connection_settings, folder_of, record_key
from kafka_eos.txn.log.kafka_store import (MODE, RECORD_MAX_BYTES, KafkaReader, KafkaStore, StoreRole, is_fenced,
                                           store_topic, too_large, transactional_id)
from kafka_eos.txn.log.log_store import LogReader, LogStore
from kafka_eos.txn.protocol.errors import ProducerFencedError, SinkLogError, StoreFencedError
from kafka_eos.txn.protocol.transactional_ids import TransactionalIdFactory


def test_a_records_key_is_its_folder_and_name():
    assert record_key("ck/kafka-eos-sink", "3.json") == "ck/kafka-eos-sink/3.json"
    assert record_key("/ck/kafka-eos-sink/", "3.json") == "ck/kafka-eos-sink/3.json"
    assert record_key("", "3.json") == "3.json"
    assert record_key("sink", "segments/0.json") == "sink/segments/0.json"


@pytest.mark.parametrize("folder", ["a//b", "a/./b", "../a", "a/.."])
def test_a_malformed_folder_is_refused(folder):
    with pytest.raises(ValueError, match="store folder"):
        folder_of(folder)


@pytest.mark.parametrize("name", ["", "/x", "x/"])
def test_a_malformed_name_is_refused(name):
    with pytest.raises(ValueError, match="record name"):
        record_key("sink", name)


def test_the_index_keeps_the_newest_record_of_a_key_and_an_older_one_never_goes_back():
    index = RecordIndex()
    index.apply("s/1", b"a", 5)
    index.apply("s/1", None, 7)  # deleted
    index.apply("s/1", b"a", 5)  # read again from the topic after the writer applied its tombstone
    assert index.get("s/1") is None
    index.apply("s/1", b"b", 9)  # re-created
    index.apply("s/1", None, 7)
    assert index.get("s/1") == b"b"


def test_names_list_a_folder_as_a_directory_would():
    index = RecordIndex()
    for offset, key in enumerate(["s/1.json", "s/2.json", "s/segments/0.json", "s/.tmp", "other/1.json",
                                  "s/gone.json", "sx/1.json"]):
        index.apply(key, b"{}", offset)
    index.apply("s/gone.json", None, 99)
    assert index.names("s") == ["1.json", "2.json", "segments"]
    assert index.names("s/segments") == ["0.json"]
    assert index.names("") == ["other", "s", "sx"]
    assert index.names("missing") == []
    assert index.exists("s/segments") and index.exists("s/1.json")
    assert not index.exists("s/gone.json") and not index.exists("s/seg")


def test_each_role_has_its_own_id_outside_the_sinks_id_scheme():
    ids = {transactional_id("orders", role) for role in StoreRole}
    assert ids == {"orders-store-driver", "orders-store-planner", "orders-store-runner", "orders-store-operator",
                   "orders-store-follower", "orders-store-probe"}
    sink_ids = TransactionalIdFactory("orders", owner="0123abcd")
    assert not any(sink_ids.owns(i) or sink_ids.prefix_wide().owns(i) or TransactionalIdFactory("orders").owns(i)
                   for i in ids)
    assert store_topic("orders") == "_kafka_eos_store-orders"


def test_only_connection_and_security_settings_reach_the_stores_clients():
    conf = {"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL", "sasl.password": "s3cret",
            "transactional.id": "theirs", "linger.ms": "500", "isolation.level": "read_uncommitted"}
    assert connection_settings(conf) == {"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL",
                                         "sasl.password": "s3cret"}


@pytest.mark.parametrize("code, fenced", [(KafkaError._FENCED, True), (KafkaError.PRODUCER_FENCED, True),
                                          (KafkaError.INVALID_PRODUCER_EPOCH, True),
                                          (KafkaError._TIMED_OUT, False), (KafkaError.MSG_SIZE_TOO_LARGE, False)])
def test_fencing_is_told_from_other_producer_errors(code, fenced):
    assert is_fenced(KafkaException(KafkaError(code))) is fenced


def test_the_fenced_error_names_the_topic_the_role_and_the_fix():
    error = StoreFencedError.of_writer("_kafka_eos_store-orders", "driver", "orders-store-driver", "sink/3.json")
    assert isinstance(error, ProducerFencedError)
    text = str(error)
    for part in ("_kafka_eos_store-orders", "driver", "orders-store-driver", "sink/3.json", "run one at a time"):
        assert part in text


def test_a_record_too_large_is_named_with_the_limit():
    text = str(too_large("kafka:t/sink/3.json", RECORD_MAX_BYTES + 1))
    assert "kafka:t/sink/3.json" in text and str(RECORD_MAX_BYTES + 1) in text and f"{RECORD_MAX_BYTES} bytes" in text


class FakeTail:
    topic = "t"
    refreshed_at = float("-inf")

    def __init__(self) -> None:
        self.index, self.refreshes = RecordIndex(), 0

    def refresh(self) -> None:
        self.refreshes += 1


class FakeWriter:
    def __init__(self) -> None:
        self.tail, self.writes = FakeTail(), []

    def write(self, key: str, value: bytes | None) -> None:
        self.writes.append((key, value))
        self.tail.index.apply(key, value, len(self.writes))


def test_the_store_creates_only_what_its_fresh_view_does_not_hold():
    writer = FakeWriter()
    store = KafkaStore(writer, "ck/sink")
    assert isinstance(store, LogStore) and store.create_mode == MODE and store.location == "kafka:t/ck/sink"
    assert store.exclusive
    store.create("1.json", '{"v": 1}')
    with pytest.raises(FileExistsError, match="kafka:t/ck/sink/1.json"):
        store.create_bytes("1.json", b"other")
    assert writer.writes == [("ck/sink/1.json", b'{"v": 1}')] and writer.tail.refreshes == 2
    assert store.read("1.json") == '{"v": 1}' and store.names() == ["1.json"]
    assert store.child("segments").location == "kafka:t/ck/sink/segments"


def test_deleting_writes_a_tombstone_only_for_a_record_that_exists():
    writer = FakeWriter()
    store = KafkaStore(writer, "sink")
    store.delete("absent.json")
    store.create_bytes("1.json", b"x")
    store.delete("1.json")
    assert writer.writes == [("sink/1.json", b"x"), ("sink/1.json", None)]
    assert store.names() == [] and store.read_bytes("1.json") is None


def test_a_record_too_large_is_refused_before_anything_is_asked():
    writer = FakeWriter()
    with pytest.raises(SinkLogError, match="nothing was written"):
        KafkaStore(writer, "sink").create_bytes("big", b"x" * (RECORD_MAX_BYTES + 1))
    assert writer.writes == [] and writer.tail.refreshes == 0


def test_a_reader_refreshes_unless_its_view_is_younger_than_max_age():
    tail = FakeTail()
    reader = KafkaReader(tail, "sink", max_age_s=3600)  # type: ignore[arg-type]
    assert isinstance(reader, LogReader) and not isinstance(reader, LogStore)
    reader.names()
    assert tail.refreshes == 1  # refreshed_at is still -inf in the stand-in
    tail.refreshed_at = float("inf")
    reader.names()
    reader.exists("1.json")
    assert tail.refreshes == 1


@pytest.mark.parametrize("kafka, files", [(KafkaReader, LogReader), (KafkaStore, LogStore)])
def test_every_method_of_the_file_store_has_a_kafka_one(kafka, files):
    """Only ``read`` and ``create`` are inherited (they call ``read_bytes`` / ``create_bytes``): a
    method added to the file store fails here until the Kafka store has its own."""
    inherited = {name for name in dir(files) if not name.startswith("_")
                 and getattr(kafka, name) is getattr(files, name)}
    assert inherited <= {"read", "create"}
