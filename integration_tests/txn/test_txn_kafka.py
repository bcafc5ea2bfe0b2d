"""The txn/ roles against a real broker (no Spark): pre-commit, driver commit, fencing, cleanup."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

from integration_tests.kafka_tools import committed_end_offsets, create_topic, read_all, unique
from kafka_eos.txn.protocol.errors import TransactionLostError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.kafka_committer import COMMITTED, LOST, KafkaCommitter
from kafka_eos.txn.writer.kafka_writer import KafkaWriter
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter


def config(bootstrap: str, topic: str, tmp_path, **kw) -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": bootstrap}, transactional_id_prefix=unique("p"),
                      log_location=str(tmp_path / "sinklog"), topic=topic, **kw)


def rows(ids) -> pa.RecordBatch:
    values = [str(i).encode() for i in ids]
    return pa.RecordBatch.from_pydict({"key": values, "value": values})


def ids_in(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[int]:
    return sorted(int(m.value()) for m in read_all(bootstrap, topic, isolation, idle_s=1.0))


def test_precommitted_is_invisible_until_the_driver_commits(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"), partitions=3)
    cfg = config(bootstrap, topic, tmp_path)
    handle = KafkaWriter(cfg, batch_id=0, sink_partition=0).write([rows(range(50)), rows(range(50, 100))])
    assert handle.records == 100 and handle.producer_id >= 0 and handle.producer_epoch >= 0
    assert sum(sum(p.values()) for p in handle.partitions.values()) == 100
    assert ids_in(bootstrap, topic) == []
    assert ids_in(bootstrap, topic, "read_uncommitted") == list(range(100))
    committer = KafkaCommitter(cfg.client_conf())
    assert committer.commit([handle]) == {0: COMMITTED}
    assert committer.commit([handle]) == {0: COMMITTED}  # a retry of a completed commit succeeds
    assert ids_in(bootstrap, topic) == list(range(100))


def test_empty_task_opens_no_transaction(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"))
    cfg = config(bootstrap, topic, tmp_path)
    handle = KafkaWriter(cfg, 0, 7).write([rows([])])
    assert not handle.has_transaction and handle.transactional_id is None
    assert TransactionAborter(cfg.client_conf(), cfg.ids).ongoing() == []


def test_a_newer_attempt_fences_the_older_one(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"))
    cfg = config(bootstrap, topic, tmp_path)
    old = KafkaWriter(cfg, 3, 1).write([rows(range(10))])
    new = KafkaWriter(cfg, 3, 1).write([rows(range(10))])  # retry of the same task
    assert new.transactional_id == old.transactional_id and new.producer_epoch > old.producer_epoch
    committer = KafkaCommitter(cfg.client_conf())
    assert committer.commit([old]) == {1: LOST}
    assert committer.commit([new]) == {1: COMMITTED}
    assert ids_in(bootstrap, topic) == list(range(10))


def test_aborter_ends_lingering_transactions_and_frees_the_lso(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"))
    cfg = config(bootstrap, topic, tmp_path)
    KafkaWriter(cfg, 0, 0).write([rows(range(5))])  # a dead attempt: never committed
    aborter = TransactionAborter(cfg.client_conf(), cfg.ids)
    assert aborter.ongoing() == [cfg.ids.id_for(0, 0)]
    assert committed_end_offsets(bootstrap, topic) == {0: 0}
    assert aborter.abort_lingering() == [cfg.ids.id_for(0, 0)]
    deadline = time.monotonic() + 10
    while committed_end_offsets(bootstrap, topic)[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert committed_end_offsets(bootstrap, topic) == {0: 6}  # 5 records + abort marker
    assert ids_in(bootstrap, topic) == [] and aborter.ongoing() == []


def test_protocol_commits_a_batch_and_skips_its_replay(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"), partitions=2)
    cfg = config(bootstrap, topic, tmp_path)
    protocol = TwoPhaseCommitProtocol.from_config(cfg)
    handles = [KafkaWriter(cfg, 0, k).write([rows(range(k * 10, k * 10 + 10))]) for k in range(2)]
    record = protocol.commit_batch(0, handles)
    assert record.state == "committed" and record.metrics["records"] == 20
    plan = TwoPhaseCommitProtocol.from_config(cfg).recover()
    assert plan.skip(0, 0) and plan.skip(0, 1) and not plan.skip(1, 0)
    # a replay that wrote anyway (no plan) is aborted, never committed twice
    replay = [KafkaWriter(cfg, 0, k).write([rows(range(k * 10, k * 10 + 10))]) for k in range(2)]
    TwoPhaseCommitProtocol.from_config(cfg).commit_batch(0, replay)
    assert ids_in(bootstrap, topic) == list(range(20))


def timeout_abort_is_reported_lost_and_rewritten(bootstrap: str, tmp_path) -> None:
    """The producers' transaction.timeout.ms (3 s) is far below the broker's maximum: the broker
    aborts partition 1's decided transaction while the "driver" stalls; the commit reports it lost
    and the replay re-writes it. The scenario each tested broker runs (test_broker_versions too)."""
    topic = create_topic(bootstrap, unique("out"), partitions=2)
    cfg = config(bootstrap, topic, tmp_path, transaction_timeout_ms=3000, batch_margin_ms=0)
    handles = [KafkaWriter(cfg, 0, k).write([rows(range(k * 10, k * 10 + 10))]) for k in range(2)]
    protocol = TwoPhaseCommitProtocol.from_config(cfg)
    KafkaCommitter(cfg.client_conf()).commit(handles[:1])  # partition 0 makes it, then the "driver" stalls
    time.sleep(7)  # > transaction.timeout.ms + the broker's abort check interval (1 s)
    with pytest.raises(TransactionLostError, match=r"sink partitions \[1\] \(10 records\)"):
        protocol.commit_batch(0, handles)
    plan = TwoPhaseCommitProtocol.from_config(cfg).recover()
    assert plan.skip(0, 0) and not plan.skip(0, 1)
    # as the engine's replay does: a durable partition's task writes nothing but counts its rows
    replay = [KafkaWriter(cfg, 0, 1).write([rows(range(10, 20))]) if not plan.skip(0, k) else
              TxnHandle.empty(k, skipped=True, records=10) for k in range(2)]
    assert TwoPhaseCommitProtocol.from_config(cfg).commit_batch(0, replay).state == "committed"
    assert ids_in(bootstrap, topic) == list(range(20))


def test_broker_timeout_abort_is_reported_lost_and_replayed(bootstrap, tmp_path):
    timeout_abort_is_reported_lost_and_rewritten(bootstrap, tmp_path)


def test_at_least_once_writes_are_visible_without_commit(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"), partitions=2)
    cfg = config(bootstrap, topic, tmp_path, exactly_once=False)
    handle = KafkaWriter(cfg, 0, 0).write([rows(range(30))])
    assert handle.records == 30 and not handle.has_transaction
    assert sum(sum(p.values()) for p in handle.partitions.values()) == 30
    assert ids_in(bootstrap, topic) == list(range(30))


def test_headers_partition_and_topic_columns_reach_kafka(bootstrap, tmp_path):
    topic = create_topic(bootstrap, unique("out"), partitions=3)
    cfg = SinkConfig(producer_conf={"bootstrap.servers": bootstrap}, transactional_id_prefix=unique("p"),
                     log_location=str(tmp_path / "log"))  # no topic option: the column decides
    headers = pa.array([[{"key": "trace", "value": b"t1"}], None],
                       pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
    batch = pa.RecordBatch.from_arrays(
        [pa.array([b"k1", b"k2"]), pa.array([b"v1", b"v2"]), pa.array([topic, topic]), pa.array([2, 1], pa.int32()),
         headers], ["key", "value", "topic", "partition", "headers"])
    handle = KafkaWriter(cfg, 0, 0).write([batch])
    assert handle.partitions == {topic: {"2": 1, "1": 1}}
    KafkaCommitter(cfg.client_conf()).commit([handle])
    got = {m.value(): (m.partition(), m.headers()) for m in read_all(bootstrap, topic, idle_s=1.0)}
    assert got == {b"v1": (2, [("trace", b"t1")]), b"v2": (1, None)}
