"""Transactions v2 (KIP-890) and the driver's commit (issue #26, point 5b).

The session broker is the pinned 4.x at its default ``transaction.version=2``. The Kafka 4.x Java
producer opens v2 transactions there (AddPartitionsToTxn/EndTxn v5: every EndTxn bumps the
producer epoch); librdkafka (the executors' producers) opens v1 ones. A v2 transaction opened by
the Java producer, whose producer is then killed, is committed (or aborted) by the driver's EndTxn
v4 by transactional id, producer id and epoch: the epoch stays the one the producer had (a v1
EndTxn does not bump it), so the sink log's handle still describes the transaction after its
commit, and a retry of the commit answers committed. A client release that switches the executors'
producers to v2 therefore keeps the driver's commit correct; ``test_librdkafka_opens_v1_transactions``
names the day it happens.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import libversion

from integration_tests.broker.test_broker_versions import described
from integration_tests.kafka_tools import committed_end_offsets, create_topic, read_all, unique
from integration_tests.txn.test_txn_kafka import config
from kafka_eos import client_factory
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError, broker_classpath, java_binary
from kafka_eos.control_plane_client import END_TXN_MAX_VERSION
from kafka_eos.txn.cluster.control_plane import control_plane
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.protocol.kafka_committer import ABORTED, COMMITTED, KafkaCommitter
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter

ROUNDS = 2  # transactions the Java producer commits itself before the one it leaves open
HOLDER = """
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** args: bootstrap, transactional id, topic, records, rounds. Commits `rounds` transactions of one
 *  record each, then opens one with `records` records, prints SENT and waits to be killed. */
public class TxnHolder {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("transactional.id", args[1]);
        props.put("transaction.timeout.ms", "300000");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        for (int round = 0; round < Integer.parseInt(args[4]); round++) {
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(args[2], ("round-" + round).getBytes())).get();
            producer.commitTransaction();
        }
        producer.beginTransaction();
        for (int i = 0; i < Integer.parseInt(args[3]); i++) {
            producer.send(new ProducerRecord<>(args[2], Integer.toString(i).getBytes())).get();
        }
        producer.flush();
        System.out.println("SENT");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
"""


def javac() -> str:
    java = Path(os.path.realpath(java_binary()))
    found = java.with_name("javac")
    if not found.exists() and not shutil.which("javac"):
        raise BrokerEnvironmentError(f"no javac beside {java} nor on PATH: install a JDK (openjdk-17-jdk-headless), "
                                     "not only a JRE")
    return str(found) if found.exists() else str(shutil.which("javac"))


@pytest.fixture(scope="module")
def holder_classes(tmp_path_factory) -> Path:
    """TxnHolder compiled against the pinned broker's kafka-clients jar."""
    build = tmp_path_factory.mktemp("txn-holder")
    (build / "TxnHolder.java").write_text(HOLDER)
    proc = subprocess.run([javac(), "-cp", broker_classpath(), "-d", str(build), str(build / "TxnHolder.java")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return build


@contextmanager
def java_transaction(classes: Path, bootstrap: str, tid: str, topic: str, records: int) -> Iterator[None]:
    """A Java producer holding an open transaction of ``records`` records; SIGKILLed on exit."""
    proc = subprocess.Popen([java_binary(), "-cp", f"{classes}{os.pathsep}{broker_classpath()}", "TxnHolder",
                             bootstrap, tid, topic, str(records), str(ROUNDS)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "SENT", "the Java producer did not send"
        yield
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def describe(bootstrap: str, tid: str):
    return control_plane({"bootstrap.servers": bootstrap}).describe_transactions([tid])[tid]


def values(bootstrap: str, topic: str) -> list[bytes]:
    return sorted(m.value() for m in read_all(bootstrap, topic, "read_committed", idle_s=1.0))


def test_the_session_broker_runs_transactions_v2(bootstrap):
    assert described(bootstrap)[1] == 2
    assert END_TXN_MAX_VERSION == 4  # the driver's EndTxn stays v1 (v4) on a v2 broker


def test_the_driver_commits_a_v2_transaction_whose_producer_was_killed(bootstrap, holder_classes):
    topic, tid = create_topic(bootstrap, unique("v2")), unique("v2-java")
    with java_transaction(holder_classes, bootstrap, tid, topic, 5):
        opened = describe(bootstrap, tid)
    assert opened.state.value == "Ongoing"
    assert opened.producer_epoch == ROUNDS  # v2: each of the producer's own commits bumped the epoch
    handle = TxnHandle(0, tid, opened.producer_id, opened.producer_epoch, records=5)
    committer = KafkaCommitter({"bootstrap.servers": bootstrap}, timeout_s=30)
    assert committer.commit([handle]) == {0: COMMITTED}
    ended = describe(bootstrap, tid)
    assert (ended.producer_id, ended.producer_epoch) == (opened.producer_id, opened.producer_epoch)
    assert committer.commit([handle]) == {0: COMMITTED}  # a retry (restart after the commit) still answers committed
    assert values(bootstrap, topic) == sorted([str(i).encode() for i in range(5)] +
                                              [f"round-{r}".encode() for r in range(ROUNDS)])


@pytest.mark.chaos  # `make chaos`: make test keeps the commit case of the Java producer
def test_the_query_starts_abort_ends_a_lingering_v2_transaction(bootstrap, holder_classes, tmp_path):
    topic = create_topic(bootstrap, unique("v2"))
    cfg = config(bootstrap, topic, tmp_path)
    tid = cfg.ids.id_for(0, 0)
    with java_transaction(holder_classes, bootstrap, tid, topic, 5):
        pass
    aborter = TransactionAborter(cfg.client_conf(), cfg.ids)
    assert aborter.ongoing() == [tid]
    assert aborter.abort_lingering() == [tid]
    assert aborter.ongoing() == [] and describe(bootstrap, tid).state.value == "CompleteAbort"
    assert values(bootstrap, topic) == [f"round-{r}".encode() for r in range(ROUNDS)]
    assert committed_end_offsets(bootstrap, topic)[0] > 0  # the last stable offset moved past the aborted records


@pytest.mark.chaos  # `make chaos`: make test keeps the commit case of the Java producer
def test_the_driver_aborts_a_v2_transaction_by_id_and_epoch(bootstrap, holder_classes):
    topic, tid = create_topic(bootstrap, unique("v2")), unique("v2-java")
    with java_transaction(holder_classes, bootstrap, tid, topic, 3):
        opened = describe(bootstrap, tid)
    handle = TxnHandle(0, tid, opened.producer_id, opened.producer_epoch, records=3)
    assert KafkaCommitter({"bootstrap.servers": bootstrap}, timeout_s=30).abort([handle]) == {0: ABORTED}
    assert values(bootstrap, topic) == [f"round-{r}".encode() for r in range(ROUNDS)]


def test_librdkafka_opens_v1_transactions(bootstrap):
    """The installed librdkafka commits two transactions of its own on the v2 broker: under v1 the
    epoch stays where InitProducerId put it; a client that spoke v2 would have bumped it twice.
    When this fails, the client opens v2 transactions: the commit path above covers them; widen the
    confluent-kafka bound in pyproject.toml after this suite passed with it."""
    topic, tid = create_topic(bootstrap, unique("v1")), unique("v1-rdkafka")
    producer = client_factory.producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    producer.init_transactions(30)
    for round in range(ROUNDS + 1):
        producer.begin_transaction()
        producer.produce(topic, f"round-{round}".encode())
        if round < ROUNDS:
            producer.commit_transaction(30)
    producer.flush(30)
    try:
        described = describe(bootstrap, tid)
        assert described.state.value == "Ongoing"
        assert described.producer_epoch == 0, (
            f"librdkafka {libversion()[0]} opened a v2 transaction (epoch {described.producer_epoch} "
            f"after {ROUNDS} commits)")
    finally:
        producer.abort_transaction(30)
