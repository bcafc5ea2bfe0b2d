"""TaskEvidence: what one sink task wrote to each output partition (record count and
``record_digest``), the evidence ``verify`` checks the committed output against.

Enforced here:
- the task chooses each record's partition itself (``record_partitioner``, librdkafka's own
  choice), so it knows what it wrote where before librdkafka sends it; a row's ``partition``
  column wins, as it does for librdkafka;
- evidence is all or nothing: if any record's partition is left to librdkafka (a partitioner
  kafka-eos cannot predict, a topic whose partition count the producer cannot see), the task
  records no digest (``complete`` is False) and writes as before; ``verify`` then says why
  the batch cannot be verified. Evidence never fails a write.
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa

from kafka_eos.txn.record_digest import PartitionDigest
from kafka_eos.txn.record_partitioner import choose
from kafka_eos.txn.records import Records

if TYPE_CHECKING:
    from kafka_eos.txn.kafka_writer import Rows

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _columns(batch: "Rows") -> tuple[pa.Array, pa.Array, pa.Array | None]:
    """keys, values, headers of a batch as Arrow columns."""
    if isinstance(batch, Records):
        headers = None if batch.headers is None else pa.array(batch.headers, HEADERS_TYPE)
        return pa.array(batch.keys, pa.binary()), pa.array(batch.values, pa.binary()), headers
    names = batch.schema.names
    keys = batch.column("key") if "key" in names else pa.nulls(batch.num_rows, pa.binary())
    return keys, batch.column("value"), batch.column("headers") if "headers" in names else None


class TaskEvidence:
    """Partitions and digests of one task's records, batch after batch, in produce order."""

    def __init__(self, partitioner: str, partition_count: Callable[[str], int | None],
                 rng: random.Random | None = None) -> None:
        self._partitioner, self._partition_count = partitioner, partition_count
        self._counts: dict[str, int | None] = {}
        self._digests: dict[tuple[str, int], PartitionDigest] = {}
        self._rng = rng or random.Random()
        self.complete = True
        self.reason = ""

    def place(self, batch: "Rows", topics: list, explicit: list[int] | None) -> list[int]:
        """Each row's partition (-1: librdkafka chooses) for ``produce``; the rows join the digests."""
        n = batch.num_rows
        chosen = np.full(n, -1, np.int32) if explicit is None else np.asarray(explicit, np.int32)
        if not self.complete or None in topics:  # a row without a topic fails the write anyway
            return chosen.tolist()
        keys, values, headers = _columns(batch)
        topic_of = np.asarray(topics, dtype=object)
        for topic in dict.fromkeys(topics):
            rows = np.flatnonzero(topic_of == topic) if len(set(topics)) > 1 else np.arange(n)
            todo = rows[chosen[rows] < 0]
            if len(todo) and not self._choose(topic, keys.take(pa.array(todo)), todo, chosen):
                return chosen.tolist()
        self._digest(topics, chosen, keys, values, headers)
        return chosen.tolist()

    def _choose(self, topic: str, keys: pa.Array, rows: np.ndarray, chosen: np.ndarray) -> bool:
        if topic not in self._counts:
            self._counts[topic] = self._partition_count(topic)
        count = self._counts[topic]
        picked = None if not count else choose(keys, count, self._partitioner, self._rng)
        if picked is None:
            self._give_up(f"partitioner {self._partitioner!r}" if count else f"no partition count of {topic!r}")
            return False
        chosen[rows] = picked
        return True

    def _give_up(self, reason: str) -> None:
        self.complete, self.reason = False, reason
        self._digests.clear()

    def _digest(self, topics: list, chosen: np.ndarray, keys: pa.Array, values: pa.Array,
                headers: pa.Array | None) -> None:
        names = list(dict.fromkeys(topics))
        topic_index = np.zeros(len(topics), np.int64) if len(names) == 1 else \
            np.asarray([names.index(t) for t in topics], np.int64)
        group = (topic_index << 32) | chosen.astype(np.int64)
        order = np.argsort(group, kind="stable")
        edges = np.flatnonzero(np.diff(group[order])) + 1
        for rows in np.split(order, edges):
            if not len(rows):
                continue
            at = pa.array(rows)
            key = (names[int(topic_index[rows[0]])], int(chosen[rows[0]]))
            digest = self._digests.setdefault(key, PartitionDigest())
            digest.add_columns(keys.take(at), values.take(at), None if headers is None else headers.take(at))

    def counts(self) -> dict[str, dict[str, int]]:
        """topic -> partition -> records, as the handle's ``partitions`` has them."""
        out: dict[str, dict[str, int]] = {}
        for (topic, partition), digest in self._digests.items():
            out.setdefault(topic, {})[str(partition)] = digest.records
        return out

    def digests(self) -> dict[str, dict[str, str]]:
        """topic -> partition -> digest; empty when the evidence is not complete."""
        out: dict[str, dict[str, str]] = {}
        for (topic, partition), digest in sorted(self._digests.items()):
            out.setdefault(topic, {})[str(partition)] = digest.hexdigest()
        return out if self.complete else {}
