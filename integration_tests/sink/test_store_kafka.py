"""kafka-eos's record store kept in Kafka (issue 63), on the session broker: create-only records
read back by fresh readers, one writer per role (a second driver fences the first, which then
writes nothing), roles that never fence each other, deletes, a reader that creates nothing, and
records of a megabyte. Store-level: no Spark, no pipeline."""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from integration_tests.kafka_tools import create_topic, read_all, unique
from kafka_eos.txn.log.kafka_store import KafkaReader, KafkaStore, KafkaWriter, StoreRole, store_topic
from kafka_eos.txn.protocol.errors import SinkLogError, StoreFencedError

FOLDER = "ck/kafka-eos-sink"


@pytest.fixture
def prefix() -> str:
    return unique("store")


def conf(bootstrap: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap}


def writer(bootstrap: str, prefix: str, role: StoreRole = StoreRole.DRIVER) -> KafkaWriter:
    return KafkaWriter.open(conf(bootstrap), prefix, role)


def fresh(bootstrap: str, prefix: str, folder: str = FOLDER) -> KafkaReader:
    return KafkaReader.open(conf(bootstrap), store_topic(prefix), folder)


def committed(bootstrap: str, prefix: str) -> list[tuple[bytes, bytes | None]]:
    """Every record a read_committed consumer reads from the store topic."""
    return [(m.key(), m.value()) for m in read_all(bootstrap, store_topic(prefix), idle_s=0.5)]


def test_a_record_created_is_read_back_by_a_fresh_reader_and_never_created_twice(bootstrap, prefix):
    driver = writer(bootstrap, prefix)
    store = KafkaStore(driver, FOLDER)
    started = time.perf_counter()
    store.create("0.json", '{"v": 1, "batch": 0}')
    took_ms = (time.perf_counter() - started) * 1000
    store.create_bytes("segments/0.json", b"")  # an empty record is a record, not a tombstone
    reader = fresh(bootstrap, prefix)  # opened at once: the record is readable when create returns
    assert reader.read("0.json") == '{"v": 1, "batch": 0}' and reader.read_bytes("segments/0.json") == b""
    assert reader.names() == ["0.json", "segments"] and reader.exists("segments")
    assert reader.child("segments").names() == ["0.json"] and fresh(bootstrap, prefix, "ck").names() == ["kafka-eos-sink"]
    with pytest.raises(FileExistsError, match=f"{store_topic(prefix)}/{FOLDER}/0.json"):
        store.create("0.json", '{"v": 1, "batch": 0, "other": true}')
    operator = KafkaStore(writer(bootstrap, prefix, StoreRole.OPERATOR), FOLDER)  # another role, another object
    with pytest.raises(FileExistsError):
        operator.create("0.json", "theirs")
    operator.create("stop.json", '{"v": 1}')  # the roles do not fence each other: both write on
    store.create("1.json", '{"v": 1, "batch": 1}')
    assert reader.names() == ["0.json", "1.json", "segments", "stop.json"]  # the open reader reads what is new
    assert [k for k, _ in committed(bootstrap, prefix)] == [
        f"{FOLDER}/{n}".encode() for n in ("0.json", "segments/0.json", "stop.json", "1.json")]
    assert store.create_mode == "kafka (transactional, fenced per writer role)"
    assert took_ms < 5000


def test_the_topic_is_compacted_with_one_partition(bootstrap, prefix):
    writer(bootstrap, prefix)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = admin.list_topics(store_topic(prefix), timeout=10).topics[store_topic(prefix)]
    assert len(topic.partitions) == 1
    resource = ConfigResource(ConfigResource.Type.TOPIC, store_topic(prefix))
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["cleanup.policy"].value == "compact"
    assert int(configs["max.message.bytes"].value) > 4 * 1024 * 1024


def test_a_deleted_record_leaves_the_names_and_can_be_created_again(bootstrap, prefix):
    store = KafkaStore(writer(bootstrap, prefix), FOLDER)
    for name in ("0.json", "1.json"):
        store.create(name, name)
    store.delete("0.json")
    store.delete("never.json")  # nothing to delete: nothing written
    assert store.names() == ["1.json"] and fresh(bootstrap, prefix).names() == ["1.json"]
    assert not fresh(bootstrap, prefix).exists("0.json")
    store.create("0.json", "again")
    assert fresh(bootstrap, prefix).read("0.json") == "again"
    assert [v for _, v in committed(bootstrap, prefix)] == [b"0.json", b"1.json", None, b"again"]


def test_a_second_driver_fences_the_first_which_then_writes_nothing(bootstrap, prefix):
    first = KafkaStore(writer(bootstrap, prefix), FOLDER)
    first.create("0.json", "first")
    second = KafkaStore(writer(bootstrap, prefix), FOLDER)  # a second run of the query, same role
    for _ in range(2):  # and it stays fenced
        with pytest.raises(StoreFencedError, match=f"{store_topic(prefix)}.*another driver.*run one at a time"):
            first.create("1.json", "first, fenced")
    second.create("1.json", "second")
    assert committed(bootstrap, prefix) == [(f"{FOLDER}/0.json".encode(), b"first"),
                                            (f"{FOLDER}/1.json".encode(), b"second")]
    assert fresh(bootstrap, prefix).read("1.json") == "second"


def test_a_reader_of_a_missing_topic_reads_nothing_and_creates_no_topic(bootstrap, prefix):
    reader = fresh(bootstrap, prefix)
    assert reader.names() == [] and not reader.exists("0.json") and reader.read("0.json") is None
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert store_topic(prefix) not in admin.list_topics(timeout=10).topics
    KafkaStore(writer(bootstrap, prefix), FOLDER).create("0.json", "late")
    assert reader.names() == ["0.json"]  # the same reader finds the topic once a writer made it


def test_a_record_of_a_megabyte_round_trips(bootstrap, prefix):
    record = bytes(range(256)) * 4096  # 1 MiB
    KafkaStore(writer(bootstrap, prefix), FOLDER).create_bytes("big.bin", record)
    assert fresh(bootstrap, prefix).read_bytes("big.bin") == record


def test_a_record_larger_than_a_topic_an_admin_made_is_refused_by_name(bootstrap, prefix):
    create_topic(bootstrap, store_topic(prefix), config={"cleanup.policy": "compact", "max.message.bytes": "100000"})
    store = KafkaStore(writer(bootstrap, prefix), FOLDER)
    with pytest.raises(SinkLogError, match=f"{FOLDER}/big.bin: a record of 200000 bytes .*max.message.bytes"):
        store.create_bytes("big.bin", b"x" * 200_000)
    store.create("small.json", "{}")  # the writer goes on; the refused record was not written
    assert [k for k, _ in committed(bootstrap, prefix)] == [f"{FOLDER}/small.json".encode()]


def test_a_checkpoint_with_committed_batches_finds_its_records_or_is_refused(bootstrap, tmp_path, prefix):
    """records: kafka names the store topic by the prefix: a changed prefix (or a deleted topic)
    would start an empty sink log beside committed batches; the start is refused by name."""
    import yaml

    from kafka_eos.config.loader import load_text
    from kafka_eos.config.records import kafka_sink_log
    from kafka_eos.connectors.exit_codes import NEEDS_OPERATOR, of_error
    from kafka_eos.connectors.pipeline.records_check import RecordsNotFound, check_records_found
    from kafka_eos.txn.log import stores
    from kafka_eos.txn.log.sink_log import SinkLog
    from integration_tests.pipeline_cli import EXAMPLES

    def pipeline(txn_prefix: str):
        doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
        doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
        doc["sink"]["transactional_id_prefix"] = txn_prefix
        doc["checkpoint"] = {**doc["checkpoint"], "location": str(tmp_path / "ck"), "records": "kafka"}
        cfg, problems = load_text(yaml.safe_dump(doc), env={"KAFKA_BOOTSTRAP_SERVERS": bootstrap})
        assert cfg is not None and not problems, problems
        return cfg

    try:
        ran = pipeline(prefix)
        check_records_found(ran)  # a new checkpoint: nothing to find
        (tmp_path / "ck" / "commits").mkdir(parents=True)
        (tmp_path / "ck" / "commits" / "0").write_text("v1\n{}\n")  # Spark committed batch 0
        with pytest.raises(RecordsNotFound, match="committed batches 0-0") as refused:
            check_records_found(ran)  # no sink log of it in the store: its records are not there
        assert of_error(refused.value) == NEEDS_OPERATOR.code
        SinkLog(str(kafka_sink_log(ran)), prefix, "q")  # the run's sink log, as its first start writes it
        check_records_found(ran)
        changed = pipeline(prefix + "-new")
        with pytest.raises(RecordsNotFound, match=f"_kafka_eos_store-{prefix}-new") as refused:
            check_records_found(changed)
        assert "set sink.transactional_id_prefix back" in str(refused.value)
    finally:
        stores.forget_clusters()
