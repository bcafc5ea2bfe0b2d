"""Small helpers the integration tests share: topics, transactional produce, counted reads."""
from __future__ import annotations

import time
import uuid
from typing import Iterable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict | None = None) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor=-1, config=config or {})])
    futures[name].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topic = admin.list_topics(name, timeout=5).topics.get(name)
        if topic and not topic.error and len(topic.partitions) == partitions:
            return name
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} not ready")


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]],
            transactional: str | None = None, commit: bool = True, partition: int | None = None) -> None:
    """Produce records; with ``transactional`` in one transaction committed or aborted."""
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    if transactional:  # short transactions: also fine for test brokers with a small maximum
        conf.update({"transactional.id": transactional, "transaction.timeout.ms": 10_000})
    producer = Producer(conf)
    if transactional:
        producer.init_transactions(30)
        producer.begin_transaction()
    for key, value in records:
        kwargs = {"partition": partition} if partition is not None else {}
        producer.produce(topic, key=key, value=value, **kwargs)
        producer.poll(0)
    producer.flush(30)
    if transactional:
        (producer.commit_transaction if commit else producer.abort_transaction)(30)


def read_all(bootstrap: str, topic: str, isolation: str = "read_committed",
             idle_s: float = 2.0, timeout_s: float = 60.0) -> list:
    """Read a topic from the beginning until every partition is at its end; return messages."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    meta = consumer.list_topics(topic, timeout=10).topics[topic]
    parts = [TopicPartition(topic, p, 0) for p in meta.partitions]
    consumer.assign(parts)
    out, last = [], time.monotonic()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and time.monotonic() - last < idle_s:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == -191:  # _PARTITION_EOF
                continue
            raise KafkaException(msg.error())
        out.append(msg)
        last = time.monotonic()
    consumer.close()
    return out


def committed_end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Last stable offset (read_committed end) per partition, via list_offsets READ_COMMITTED."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in meta.partitions}
    result = admin.list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED)
    return {tp.partition: f.result().offset for tp, f in result.items()}
