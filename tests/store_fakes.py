"""Stand-ins for the Kafka record store's writer and view (no broker): every writer and view of a
test shares one topic's records, as the topic would (``fake_kafka``)."""
from __future__ import annotations

from kafka_eos.txn.log import stores
from kafka_eos.txn.log.kafka_index import RecordIndex
from kafka_eos.txn.log.kafka_store import StoreRole


class FakeTail:
    def __init__(self, topic: str, index: RecordIndex) -> None:
        self.topic, self.index, self.refreshed_at = topic, index, float("-inf")

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


class FakeWriter:
    opened: list[tuple[str, StoreRole, str, dict]] = []

    def __init__(self, topic: str, role: StoreRole, index: RecordIndex) -> None:
        self.topic, self.role, self.tail, self.offset = topic, role, FakeTail(topic, index), 0

    def write(self, key: str, value: bytes | None) -> None:
        self.offset += 1
        self.tail.index.apply(key, value, self.offset)

    def close(self) -> None:
        pass


def fake_kafka(monkeypatch):
    """Patch the factory to open stand-ins; yields the topic's records (a generator for a fixture)."""
    index = RecordIndex()
    FakeWriter.opened = []

    def open_writer(conf, prefix, role, topic, clients):
        FakeWriter.opened.append((topic, role, prefix, dict(conf)))
        return FakeWriter(topic, role, index)

    monkeypatch.setattr(stores.KafkaWriter, "open", open_writer)
    monkeypatch.setattr(stores, "open_tail", lambda conf, topic, clients: FakeTail(topic, index))
    stores.forget_clusters()
    stores.use_role(StoreRole.OPERATOR)
    yield index
    stores.forget_clusters()
    stores.use_role(StoreRole.OPERATOR)
