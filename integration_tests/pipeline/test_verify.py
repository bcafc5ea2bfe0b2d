"""``kafka-eos verify`` on a real run (issue 46): the output read back against each batch's evidence.

The shipped orders-json pipeline (a SQL transform, a DLQ in the same transactions) on topics of
its own runs ``--once``; then ``verify`` must pass every batch, then catch what it exists for:
records of a committed batch deleted (DeleteRecords: "cannot be verified", never passed) and a
record another transactional producer commits into the output in the middle of a run (failed,
with the batch and the offset).
"""
from __future__ import annotations

import json
import random
from collections import Counter

import pyarrow as pa
import pytest
import yaml
from confluent_kafka import Producer

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders, read_committed
from kafka_eos.txn.writer.record_partitioner import choose
from integration_tests.kafka_tools import create_topic, read_all, unique
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, kill_supervised_run, tail, wait_for
from integration_tests.pipeline.test_verify_recompute import recomputed_all
from integration_tests.pipeline.test_verify_recompute import verify as _verify
from integration_tests.pipeline.test_status import ORDERS, pipeline_file, topics  # noqa: F401 - the fixture

BATCH = 1500
EXACT = {"duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


def _pipeline(tmp_path, names: dict[str, str]) -> str:
    text = (EXAMPLES / "orders-json.yaml").read_text()
    text = text.replace("topics: [orders]", f"topics: [{names['in']}]")
    text = text.replace("topic: orders-priced", f"topic: {names['out']}")
    text = text.replace("dlq_topic: orders-dlq", f"dlq_topic: {names['dlq']}")
    text = text.replace("max_offsets_per_trigger: 10000", f"max_offsets_per_trigger: {BATCH}")
    text = text.replace("file: ../schemas/order.avsc", f"file: {EXAMPLES.parent / 'schemas' / 'order.avsc'}")
    path = tmp_path / "verify-orders.yaml"
    path.write_text(text)
    return str(path)


def _status(path: str, bootstrap: str, tmp_path) -> dict:
    done = kafka_eos(["status", path, "--json"], bootstrap, tmp_path, timeout=120)
    assert done.code in (0, 1), done.log()
    return json.loads(done.stdout)


@pytest.mark.long  # minutes: make long (CI, after make test)
def test_verify_passes_a_run_then_names_deleted_and_foreign_records(bootstrap, tmp_path):
    names = {"in": unique("v-orders"), "out": unique("v-priced"), "dlq": unique("v-dlq")}
    create_topics(bootstrap, {names["in"]: 3, names["out"]: 3, names["dlq"]: 1})
    path = _pipeline(tmp_path, names)
    first = produce_orders(bootstrap, names["in"], 6000, poison=3, aborted_every=2000, aborted_size=40)
    # Spark keeps 2 batches: the older ones are re-run from the input their sink-log records kept
    run = kafka_eos(["run", path, "--once", "--conf", "spark.sql.streaming.minBatchesToRetain=2"], bootstrap, tmp_path)
    assert run.code == 0, run.log()
    assert order_report(bootstrap, {first.run: 6000}, topic=names["out"]) == EXACT | {"out": 6000}
    held = sorted(int(p.name) for p in (tmp_path / "orders-json" / "offsets").iterdir() if p.name.isdigit())

    code, report = _verify(path, bootstrap, tmp_path, "--recompute")  # two scans a batch: output and DLQ
    batches = report["per_batch"]
    assert code == 0 and len(batches) >= 3 and batches[0]["batch"] == 0 < held[0], (report, held)
    recomputed_all(report)
    assert sum(b["records"] for b in batches) == 6000 + 3, "every order and the 3 poison records (DLQ)"
    shown = _status(path, bootstrap, tmp_path)
    assert shown["verify"]["newest_verified_batch"] == batches[-1]["batch"], shown
    assert shown["verify"]["batches"] == {"verified": len(batches)}, shown

    # records of the first batch deleted: that batch cannot be verified, the others still verify
    first_batch = batches[0]["batch"]
    victim = min((m for m in read_all(bootstrap, names["out"], "read_committed", idle_s=1.0) if m.partition() == 0),
                 key=lambda m: m.offset())
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.delete_records({TopicPartition(names["out"], 0): victim.offset() + 1})
    admin.close()
    code, report = _verify(path, bootstrap, tmp_path)
    outcomes = {b["batch"]: b["outcome"] for b in report["per_batch"]}
    assert code == 7 and outcomes[first_batch] == "cannot be verified", report  # not a failure: no page
    assert report["first_problem"]["batch"] == first_batch and report["first_problem"]["partition"] == 0, report
    code, later = _verify(path, bootstrap, tmp_path, "--batches", f"{first_batch + 1}..")
    assert code == 0, later

    # another writer commits a record into the output in the middle of a run (the run paused right after
    # a batch's commit): the batch whose records follow it in the partition fails there
    faults = tmp_path / "faults"
    faults.mkdir()
    doc = yaml.safe_load(open(path).read())
    doc["sink"]["options"] = {"faultInjection": "after_end_txns", "faultInjectionDir": str(faults)}
    open(path, "w").write(yaml.safe_dump(doc))
    second = produce_orders(bootstrap, names["in"], 4500, aborted_every=1500, aborted_size=10)
    intruder = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("intruder")})
    intruder.init_transactions(30)
    log = tmp_path / "second-run.log"
    run2 = start_kafka_eos(["run", path, "--once"], bootstrap, tmp_path, log)
    try:
        wait_for((faults, "after_end_txns.*"), run2, 300, log)
        placed: list = []
        intruder.begin_transaction()
        intruder.produce(names["out"], json.dumps({"order_id": "intruder-0"}).encode(), b"not-ours", partition=1,
                         on_delivery=lambda err, msg: placed.append(msg.offset()))
        intruder.commit_transaction(30)
        (faults / "release").touch()
        assert run2.wait(400) == 0, tail(log)
    finally:
        kill_group(run2)
    [foreign_offset] = placed
    ids = Counter(json.loads(m.value())["order_id"] for m in read_committed(bootstrap, names["out"]))  # to each end
    expected = {f"{run.run}-{i}" for run in (first, second) for i in range(run.orders)}
    expected.discard(json.loads(victim.value())["order_id"])  # the record deleted above
    assert {i for i in ids if i in expected} == expected and all(ids[i] == 1 for i in expected)
    code, report = _verify(path, bootstrap, tmp_path, "--batches", f"{first_batch + 1}..")
    failed = [b for b in report["per_batch"] if b["outcome"] == "failed"]
    assert code == 6 and len(failed) == 1 and failed[0]["batch"] == batches[-1]["batch"] + 2, report
    assert report["first_problem"] == {"batch": failed[0]["batch"], "topic": names["out"], "partition": 1,
                                       "offset": foreign_offset}, report
    assert "another writer" in failed[0]["problems"][0], failed
    assert any("the last kafka-eos verify found 1 batch(es) failed" in line
               for line in _status(path, bootstrap, tmp_path)["attention"])


def test_the_sinks_partition_choice_is_librdkafkas_own(bootstrap):
    """The evidence needs each record's partition before it is sent: the task chooses it
    (``record_partitioner``); here librdkafka chooses for the same keys, and they must agree."""
    topic = create_topic(bootstrap, unique("keys-rdk"), partitions=7)
    rng = random.Random(11)
    keys = list({bytes(rng.randrange(256) for _ in range(rng.randrange(1, 30))) for _ in range(1500)})
    producer_keys = [(k, b"x") for k in keys]
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
    for key, value in producer_keys:
        producer.produce(topic, value=value, key=key)
    assert producer.flush(30) == 0
    placed = {m.key(): m.partition() for m in read_all(bootstrap, topic, "read_uncommitted", idle_s=1.0)}
    chosen = choose(pa.array(keys, pa.binary()), 7, "murmur2_random")
    assert chosen is not None and len(placed) == len(keys)
    assert {k: int(p) for k, p in zip(keys, chosen, strict=True)} == placed


@pytest.mark.chaos  # `make chaos`: make test keeps verify after a driver killed right after a decision (test_status)
def test_verify_passes_after_a_driver_killed_before_a_decision_and_the_replays_rewrite(bootstrap, topics,  # noqa: F811
                                                                                        tmp_path):
    """The killed run's pre-committed transactions of batch 1 are aborted in the log and the restart
    re-writes the batch under new producer ids: verify attributes every record to the batch that
    committed it and passes every batch."""
    faults = tmp_path / "faults"
    faults.mkdir()
    path = pipeline_file(tmp_path, topics, {"faultInjection": "before_decision@1", "faultInjectionDir": str(faults)})
    log = tmp_path / "run.log"
    supervisor = start_kafka_eos(["run", str(path), "--once", "--restarts", "1"], bootstrap, tmp_path, log)
    try:
        kill_supervised_run(supervisor, faults, "before_decision", log)
        assert supervisor.wait(400) == 0, tail(log)
    finally:
        kill_group(supervisor)
    assert order_report(bootstrap, {topics[0]: ORDERS}, topics[1]) == EXACT | {"out": ORDERS}
    code, report = _verify(str(path), bootstrap, tmp_path, "--recompute")
    assert code == 0, report
    recomputed_all(report)
    assert sum(b["records"] for b in report["per_batch"]) == ORDERS and 1 in {b["batch"] for b in report["per_batch"]}
