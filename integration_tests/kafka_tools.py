"""Small helpers the integration tests share: topics, transactional produce, counted reads."""
from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Collection, Hashable, Iterable

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
             idle_s: float = 2.0, timeout_s: float = 60.0, conf: dict | None = None) -> list:
    """Read a topic from the beginning until every partition is at its end; return messages.
    ``conf``: more client settings (e.g. a secured cluster's security settings)."""
    consumer = Consumer({**(conf or {}), "bootstrap.servers": bootstrap, "group.id": unique("reader"),
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


def end_offsets(bootstrap: str, topic: str, isolation: str = "read_committed") -> dict[int, int]:
    """Per partition: the last stable offset (read_committed end) or the high watermark
    (``isolation='read_uncommitted'``), via list_offsets."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec
    level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in meta.partitions}
    result = admin.list_offsets(request, isolation_level=level)
    return {tp.partition: f.result().offset for tp, f in result.items()}


def committed_end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Last stable offset (read_committed end) per partition."""
    return end_offsets(bootstrap, topic)


def high_watermarks(bootstrap: str, topic: str) -> dict[int, int]:
    """High watermark (read_uncommitted end) per partition."""
    return end_offsets(bootstrap, topic, "read_uncommitted")


# --- exactly-once accounting: the one checker every integration test uses -----------------------

ABORTED_BASE = 1_000_000
"""Input ids at or above this were written in aborted transactions: none may reach the output."""


@dataclass(frozen=True)
class ExactlyOnceReport:
    """What the read_committed output holds against the ids it should hold."""
    records: int
    expected: int
    lost: int
    duplicated: int
    aborted_input: int
    before_start: int = 0         # ids not expected (outside 0..ids-1, or before the query's start)
    order_violations: int = 0     # per key, an id after a larger one (only counted when asked)
    held: int = 0                 # partitions whose LSO stayed below the high watermark after a stop
    unplanned_stops: int = 0      # the query stopped on its own (a chaos run restarts it, but counts it)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.aborted_input or self.order_violations
                    or self.before_start or self.held or self.unplanned_stops)

    def line(self) -> str:
        return (f"{self.records} out of {self.expected} expected, {self.lost} lost, {self.duplicated} duplicated, "
                f"{self.aborted_input} from aborted input transactions, {self.order_violations} order violations, "
                f"{self.before_start} unexpected (e.g. from before the query's start)"
                + (f", {self.held} partitions held by open transactions after the stop" if self.held else "")
                + (f", {self.unplanned_stops} unplanned query stops" if self.unplanned_stops else ""))


def output_id(message) -> int:
    return int(message.value().decode().removeprefix("out-"))


def output_ids(bootstrap: str, topic: str, isolation: str = "read_committed") -> Counter:
    return Counter(output_id(m) for m in read_all(bootstrap, topic, isolation, idle_s=1.5, timeout_s=300))


def _order_violations(messages) -> int:
    seen: Counter = Counter()
    last_by_key: dict[bytes, int] = {}
    violations = 0
    for m in messages:  # read_all returns each partition's records in offset order
        value = output_id(m)
        seen[value] += 1
        if value < ABORTED_BASE and seen[value] == 1:
            if m.key() in last_by_key and value < last_by_key[m.key()]:
                violations += 1
            last_by_key[m.key()] = value
    return violations


def committed_input_ids(bootstrap: str, input_topic: str, start: dict[int, int]) -> set[int]:
    """Ids of the committed input records at or after ``start`` (partition -> first offset): what a
    query started there must output."""
    records = read_all(bootstrap, input_topic, "read_committed", idle_s=2.0, timeout_s=300)
    return {int(m.value()) for m in records if m.offset() >= start[m.partition()] and int(m.value()) < ABORTED_BASE}


def tally(seen: Iterable[Hashable], expected: Collection[Hashable]) -> ExactlyOnceReport:
    """Count the ids found in an output against the ids it should hold."""
    counts = Counter(seen)
    wanted = set(expected)
    aborted = {i for i in counts if isinstance(i, int) and i >= ABORTED_BASE}
    return ExactlyOnceReport(
        records=sum(counts.values()), expected=len(wanted),
        lost=sum(1 for i in wanted if counts[i] == 0),
        duplicated=sum(c - 1 for c in counts.values() if c > 1),
        aborted_input=sum(counts[i] for i in aborted),
        before_start=sum(c for i, c in counts.items() if i not in aborted and i not in wanted))


def check_exactly_once(bootstrap: str, topic: str, ids: int | None = None, expected: Collection | None = None,
                       ordered: bool = False, id_of: Callable = output_id, conf: dict | None = None
                       ) -> ExactlyOnceReport:
    """Read ``topic`` with read_committed and count: every expected id exactly once (``expected``, or
    0..ids-1), nothing from aborted input, nothing else; with ``ordered``, per-key order too."""
    messages = read_all(bootstrap, topic, "read_committed", idle_s=2.0, timeout_s=300, conf=conf)
    report = tally((id_of(m) for m in messages), range(ids or 0) if expected is None else expected)
    return replace(report, order_violations=_order_violations(messages)) if ordered else report


def assert_exactly_once(report: ExactlyOnceReport) -> None:
    assert report.ok, report.line()
    assert report.records >= 1, "the output is empty"


def held_partitions(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """Partitions whose last stable offset is below the high watermark (an open transaction holds
    back read_committed readers): partition -> (LSO, high watermark)."""
    stable, high = committed_end_offsets(bootstrap, topic), high_watermarks(bootstrap, topic)
    return {p: (stable[p], high[p]) for p in sorted(high) if stable.get(p, -1) < high[p]}


def wait_released(bootstrap: str, topic: str, bound_s: float) -> tuple[float, dict[int, tuple[int, int]]]:
    """Poll until no partition of ``topic`` is held (LSO == high watermark) or ``bound_s`` passed;
    return (seconds waited, partitions still held)."""
    started = time.monotonic()
    while True:
        held = held_partitions(bootstrap, topic)
        waited = time.monotonic() - started
        if not held or waited >= bound_s:
            return waited, held
        time.sleep(0.25)


def ongoing_transactions(bootstrap: str) -> set[str]:
    """Transactional ids with an Ongoing transaction on the cluster at ``bootstrap`` (ListTransactions)."""
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listings = admin.list_transactions(state_filters=["Ongoing"])
    finally:
        admin.close()
    return {t.transactional_id for rows in listings.values() for t in rows}


def out_of_sync(bootstrap: str) -> list[str]:
    """Every partition (internal topics included) whose in-sync replicas are not all its replicas."""
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    return [f"{name}-{p.id}" for name, meta in topics.items() for p in meta.partitions.values()
            if set(p.isrs) != set(p.replicas)]


def wait_in_sync(bootstrap: str, bound_s: float) -> float:
    """Until every partition has all its replicas in sync again (a healed broker caught up), at most
    ``bound_s`` (then fails naming the partitions); the seconds it took."""
    began = time.monotonic()
    while lagging := out_of_sync(bootstrap):
        assert time.monotonic() - began < bound_s, f"not in sync {bound_s} s after the fault: {lagging[:10]}"
        time.sleep(0.5)
    return round(time.monotonic() - began, 1)
