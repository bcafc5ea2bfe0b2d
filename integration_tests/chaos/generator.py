"""Input for chaos runs: ids 0..n-1 keyed by id % KEYS (so per-key order can be checked),
in committed transactions and plain writes, with aborted transactions mixed in. With
``pause_s`` the chunks are spread over time, so the input can keep arriving while the query
starts and while faults hit it."""
from __future__ import annotations

import random
import time
from typing import Callable

from confluent_kafka import KafkaException, Producer

from integration_tests.kafka_tools import ABORTED_BASE, create_topic, unique

KEYS = 97


def generate(bootstrap: str, topic: str, ids: int, partitions: int, rng: random.Random,
             pause_s: float = 0.0, create: bool = True, started: Callable[[], bool] | None = None,
             wait_s: float = 300.0) -> None:
    """Write ids 0..ids-1 in chunks (plain, transactional, plus aborted transactions). With
    ``started``, the second half waits (at most ``wait_s``) until ``started()`` is true, so part
    of the input always arrives after a live-started query resolved its start."""
    if create:
        create_topic(bootstrap, topic, partitions=partitions)
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 2})  # no connect noise
    txn_id = unique("chaos-in")
    txn = _transactional(bootstrap, txn_id)
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
            try:
                txn.abort_transaction(60)
            except KafkaException:  # a fatal abort: a new producer's init aborts it just the same
                txn = _transactional(bootstrap, txn_id)
        start += size
        if started is not None and start >= ids // 2:
            _wait(started, wait_s)
            started = None
        if pause_s:
            time.sleep(pause_s)


def _wait(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)


def _transactional(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "transactional.id": transactional_id,
                         "log_level": 2})
    producer.init_transactions(60)
    return producer
