"""The demo's input and its check: JSON orders in Kafka transactions, and a read_committed count.

Invariants:
- Order ``i`` has id ``<run>-<i>``, key = id, quantity >= 1 (so the example's filter keeps every
  order): the pipeline must output each committed order id exactly once.
- Aborted transactions carry ids ``<run>-aborted-<i>`` (must never appear downstream); poison
  records (not JSON) carry keys ``<run>-poison-<i>`` (must land in the DLQ exactly once).
- ``read_committed`` reads every partition from the beginning to its end (stable once the
  pipeline has stopped), so the counts are exact, not "quiet for a while" guesses.
"""
from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from kafka_eos import client_factory
from kafka_eos.client_factory import Noise

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def order(run: str, i: int) -> tuple[bytes, bytes]:
    order_id = f"{run}-{i}"
    value = {"order_id": order_id, "customer": f"customer-{i % 97}", "quantity": 1 + i % 5,
             "unit_price": f"{1 + i % 50}.{i % 100:02d}", "created_at": BASE_MS + i * 10}
    return order_id.encode(), json.dumps(value).encode()


def expected_total(i: int) -> str:
    cents = (1 + i % 5) * ((1 + i % 50) * 100 + i % 100)
    return f"{cents // 100}.{cents % 100:02d}"


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    admin = client_factory.admin({"bootstrap.servers": bootstrap}, Noise.ERRORS)
    wanted = [NewTopic(t, n, replication_factor=-1) for t, n in partitions.items()]
    for future in admin.create_topics(wanted).values():
        try:
            future.result(30)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


@dataclass
class Input:
    run: str
    orders: int
    aborted: int = 0
    poison: int = 0


def produce_orders(bootstrap: str, topic: str, orders: int, run: str | None = None, poison: int = 0,
                   aborted_every: int = 10_000, aborted_size: int = 100) -> Input:
    """``orders`` orders in committed transactions of ``aborted_every`` records, each followed by
    an aborted one of ``aborted_size``; ``poison`` records spread over the committed ones."""
    info = Input(run or uuid.uuid4().hex[:8], orders)
    producer = client_factory.producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                                        "transactional.id": f"demo-input-{uuid.uuid4().hex}"}, Noise.ERRORS)
    producer.init_transactions(30)
    poison_at = {orders * (n + 1) // (poison + 1) for n in range(poison)}
    for start in range(0, orders, aborted_every):
        producer.begin_transaction()
        for i in range(start, min(orders, start + aborted_every)):
            if i in poison_at:
                producer.produce(topic, key=f"{info.run}-poison-{info.poison}".encode(), value=b"{not json")
                info.poison += 1
            _produce(producer, topic, *order(info.run, i))
        producer.flush(60)
        producer.commit_transaction(60)
        producer.begin_transaction()
        for i in range(aborted_size):
            key, value = order(f"{info.run}-aborted", start + i)
            _produce(producer, topic, key, value)
        producer.flush(60)  # aborting with records in flight can fail with INVALID_TXN_STATE
        producer.abort_transaction(60)
        info.aborted += aborted_size
    return info


def _produce(producer: Producer, topic: str, key: bytes, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, key=key, value=value)
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.05)


def read_committed(bootstrap: str, topic: str, timeout_s: float = 120) -> list:
    """Every committed record of ``topic`` (all partitions, from the start to the end)."""
    consumer = client_factory.consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex}",
                                        "isolation.level": "read_committed", "enable.partition.eof": True,
                                        "enable.auto.commit": False}, Noise.ERRORS)
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])  # the log start, after deletions too
    out: list = []
    done: set[int | None] = set()
    deadline = time.monotonic() + timeout_s
    while len(done) < len(partitions):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: partitions {sorted(set(partitions) - done)} not read to the end")
        for msg in consumer.consume(1000, 0.5):
            error = msg.error()
            if error is None:
                out.append(msg)
            elif error.code() == KafkaError._PARTITION_EOF:
                done.add(msg.partition())
            else:
                raise KafkaException(error)
    consumer.close()
    return out


def count_ids(keys: list[str], expected: list[str]) -> dict[str, int]:
    """out / duplicates / missing / unexpected of ``keys`` against the ``expected`` ids."""
    seen, wanted = Counter(keys), set(expected)
    return {"out": len(keys), "duplicates": sum(c - 1 for k, c in seen.items() if c > 1 and k in wanted),
            "missing": sum(1 for k in wanted if seen[k] == 0),
            "unexpected": sum(c for k, c in seen.items() if k not in wanted)}


def order_report(bootstrap: str, runs: dict[str, int], topic: str = "orders-priced") -> dict[str, int]:
    """out / duplicates / missing / unexpected / wrong_total of the orders of ``runs`` (run id ->
    orders) in ``topic``. Every output with an id of a run counts, so an order of the run's aborted
    transactions (``<run>-aborted-<i>``) shows as unexpected."""
    values = [json.loads(m.value()) for m in read_committed(bootstrap, topic)]
    ours = [v for v in values if any(v["order_id"].startswith(f"{run}-") for run in runs)]
    expected = {f"{run}-{i}": i for run, n in runs.items() for i in range(n)}
    report = count_ids([v["order_id"] for v in ours], list(expected))
    report["wrong_total"] = sum(1 for v in ours if v["order_id"] in expected
                                and v["total"] != expected_total(expected[v["order_id"]]))
    return report
