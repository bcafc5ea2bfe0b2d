"""Input for chaos runs: ids 0..n-1 keyed by id % KEYS (so per-key order can be checked),
in committed transactions and plain writes, with aborted transactions mixed in."""
from __future__ import annotations

import random

from confluent_kafka import Producer

from integration_tests.chaos.checker import ABORTED_BASE
from integration_tests.kafka_tools import create_topic, unique

KEYS = 97


def generate(bootstrap: str, topic: str, ids: int, partitions: int, rng: random.Random) -> None:
    create_topic(bootstrap, topic, partitions=partitions)
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    txn = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "transactional.id": unique("chaos-in")})
    txn.init_transactions(30)
    start = 0
    while start < ids:
        size = rng.randint(100, 2000)
        kind = rng.choice(["txn", "txn", "plain"])
        chunk = range(start, min(ids, start + size))
        if kind == "plain":
            for i in chunk:
                plain.produce(topic, str(i).encode(), str(i % KEYS).encode())
            plain.flush(60)
        else:
            txn.begin_transaction()
            for i in chunk:
                txn.produce(topic, str(i).encode(), str(i % KEYS).encode())
            txn.commit_transaction(60)
        if rng.random() < 0.3:
            txn.begin_transaction()
            for i in range(start, start + rng.randint(1, 50)):
                txn.produce(topic, str(ABORTED_BASE + i).encode(), str(i % KEYS).encode())
            txn.abort_transaction(60)
        start += size
