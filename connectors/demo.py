"""`kafka-eos demo`: a local broker, a generated input, and a printed exactly-once count.

Until the pipeline runner lands this is the broker smoke run: it writes ids in committed and
aborted transactions and counts what a read_committed reader sees.
"""
from __future__ import annotations

import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, Producer, TopicPartition

from connectors.dev.local_kafka import LocalKafkaCluster


def _produce(bootstrap: str, topic: str, ids: range, commit: bool) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"demo-{uuid.uuid4().hex}",
                         "linger.ms": 20})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in ids:
        producer.produce(topic, key=str(i).encode(), value=str(i).encode())
        producer.poll(0)
    (producer.commit_transaction if commit else producer.abort_transaction)(60)


def _count(bootstrap: str, topic: str, expected: int) -> Counter:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: Counter = Counter()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if sum(seen.values()) >= expected:
                break
            continue
        seen[int(msg.value())] += 1
    consumer.close()
    return seen


def smoke(records: int = 10_000) -> int:
    with LocalKafkaCluster() as cluster:
        topic = f"demo-{uuid.uuid4().hex[:8]}"
        _produce(cluster.bootstrap, topic, range(records), commit=True)
        _produce(cluster.bootstrap, topic, range(records, records + 1000), commit=False)
        seen = _count(cluster.bootstrap, topic, records)
    missing = sum(1 for i in range(records) if seen[i] == 0)
    duplicates = sum(c - 1 for c in seen.values() if c > 1)
    aborted = sum(1 for i in seen if i >= records)
    print(f"demo: {records} in, {sum(seen.values())} out, {duplicates} duplicates, "
          f"{missing} missing, {aborted} from aborted transactions")
    return 0 if (missing, duplicates, aborted) == (0, 0, 0) else 1
