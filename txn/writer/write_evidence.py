"""TaskEvidence: what one sink task wrote to each output partition (record count and
``record_digest``), the evidence ``verify`` checks the committed output against.

Enforced here:
- the task chooses each record's partition itself (``record_partitioner``, librdkafka's own
  choice), so it knows what it wrote where before librdkafka sends it; a row's ``partition``
  column wins, as it does for librdkafka;
- evidence is all or nothing: if any record's partition is left to librdkafka (a partitioner
  kafka-eos cannot predict, a topic whose partition count the producer cannot see), the task
  records no digest (``complete`` is False) and writes as before; ``verify`` then says why
  the batch cannot be verified. Evidence never fails a write;
- the records' timestamps have their own digest per partition (``TimestampDigest``) when every
  record of the task was written with a timestamp the task chose (``record_times``: a timestamp
  column, or a copy's source timestamps); otherwise librdkafka stamped them and there is none.
"""
from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa

from kafka_eos.txn.writer.record_digest import PartitionDigest, TimestampDigest
from kafka_eos.txn.writer.record_partitioner import choose
from kafka_eos.txn.writer.record_times import TIMESTAMP
from kafka_eos.txn.writer.records import Records

if TYPE_CHECKING:
    from kafka_eos.txn.writer.kafka_writer import Rows

log = logging.getLogger(__name__)
PARTITION_COUNT_WAIT_S = 10.0  # the metadata request for an output topic's partition count
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def partition_counts(producer: Any) -> Callable[[str], int | None]:
    """A topic's partition count from the producer's metadata (None if it cannot tell)."""
    def count(topic: str) -> int | None:
        try:
            found = producer.list_topics(topic, timeout=PARTITION_COUNT_WAIT_S).topics.get(topic)
        except Exception:  # noqa: BLE001 - no count, no evidence; the write itself reports a missing topic
            return None
        return len(found.partitions) if found is not None and found.error is None and found.partitions else None
    return count


def _columns(batch: "Rows") -> tuple[pa.Array, pa.Array, pa.Array | None, pa.Array | None]:
    """keys, values, headers, timestamps (epoch ms, ``record_times.stamped``) of a batch as Arrow columns."""
    if isinstance(batch, Records):
        headers = None if batch.headers is None else pa.array(batch.headers, HEADERS_TYPE)
        times = None if batch.timestamps is None else pa.array(np.fromiter(batch.timestamps, np.int64,
                                                                            len(batch.timestamps)))
        return pa.array(batch.keys, pa.binary()), pa.array(batch.values, pa.binary()), headers, times
    names = batch.schema.names
    keys = batch.column("key") if "key" in names else pa.nulls(batch.num_rows, pa.binary())
    return (keys, batch.column("value"), batch.column("headers") if "headers" in names else None,
            batch.column(TIMESTAMP) if TIMESTAMP in names else None)


class TaskEvidence:
    """Partitions and digests of one task's records, batch after batch, in produce order."""

    def __init__(self, partitioner: str, partition_count: Callable[[str], int | None],
                 rng: random.Random | None = None) -> None:
        self._partitioner, self._partition_count = partitioner, partition_count
        self._counts: dict[str, int | None] = {}
        self._digests: dict[tuple[str, int], PartitionDigest] = {}
        self._times: dict[tuple[str, int], TimestampDigest] = {}
        self._timed = True  # every record so far carried the timestamp it was written with
        self._rng = rng or random.Random()
        self.complete = True
        self.reason = ""

    def place(self, batch: "Rows", topics: list, explicit: list[int] | None) -> tuple["Rows", list, list[int]]:
        """(the rows in the order to produce them, their topics, each one's partition; -1: librdkafka
        chooses). Arrow rows come back grouped by (topic, partition), each group in its order: the
        order within a partition, the only order Kafka keeps, is unchanged; regrouped rows come back
        as the columns the writer produces (key, value[, headers][, timestamp]), each copied once. The rows join
        the digests."""
        n = batch.num_rows
        chosen = np.full(n, -1, np.int32) if explicit is None else np.asarray(explicit, np.int32)
        if not self.complete or not n or None in topics:  # a row without a topic fails the write anyway
            return batch, topics, chosen.tolist()
        keys, values, headers, times = _columns(batch)
        self._timed = self._timed and times is not None
        names = [topics[0]] if topics.count(topics[0]) == n else list(dict.fromkeys(topics))
        topic_of = None if len(names) == 1 else np.asarray(topics, dtype=object)
        for topic in names:
            rows = np.arange(n) if topic_of is None else np.flatnonzero(topic_of == topic)
            todo = rows if explicit is None and topic_of is None else rows[chosen[rows] < 0]
            if len(todo) and not self._choose(topic, keys if len(todo) == n else keys.take(pa.array(todo)), todo, chosen):
                return batch, topics, chosen.tolist()
        topic_index = np.zeros(n, np.int64) if topic_of is None else np.asarray([names.index(t) for t in topics])
        group = (topic_index << 32) | chosen.astype(np.int64)
        if len(names) == 1 and chosen.max(initial=0) < 2**15:
            group = chosen.astype(np.int16)  # small integers: numpy's stable sort is a radix sort
        order = np.argsort(group, kind="stable")
        ordered = group[order]
        edges = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), n]
        extra = [(c, name) for c, name in ((headers, "headers"), (times, TIMESTAMP)) if c is not None]
        columns = pa.RecordBatch.from_arrays([keys, values] + [c for c, _ in extra],
                                             ["key", "value"] + [name for _, name in extra])
        if len(edges) > 2:  # the rows' bytes are copied once, and only what is produced
            columns = columns.take(pa.array(order))
        self._digest(names, topic_index[order], chosen[order], edges, columns)
        if isinstance(batch, Records) or len(edges) == 2:
            return batch, topics, chosen.tolist()
        return columns, topics if topic_of is None else [topics[i] for i in order], chosen[order].tolist()

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
        self._times.clear()

    def _digest(self, names: list[str], topic_index: np.ndarray, chosen: np.ndarray, edges: list[int],
                rows: pa.RecordBatch) -> None:
        """Each group of rows (one topic and partition, in order) into its partition's digest."""
        headers = rows.column("headers") if "headers" in rows.schema.names else None
        times = rows.column(TIMESTAMP) if TIMESTAMP in rows.schema.names else None
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            key = (names[int(topic_index[lo])], int(chosen[lo]))
            digest = self._digests.setdefault(key, PartitionDigest())
            digest.add_columns(rows.column("key").slice(lo, hi - lo), rows.column("value").slice(lo, hi - lo),
                               None if headers is None else headers.slice(lo, hi - lo))
            if times is not None:
                self._times.setdefault(key, TimestampDigest()).add_column(times.slice(lo, hi - lo))

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

    def timestamp_digests(self) -> dict[str, dict[str, str]]:
        """topic -> partition -> digest of the records' timestamps; empty unless the evidence is
        complete and every record was written with a timestamp the task chose (``record_times``)."""
        if not (self.complete and self._timed):
            return {}
        out: dict[str, dict[str, str]] = {}
        for (topic, partition), digest in sorted(self._times.items()):
            out.setdefault(topic, {})[str(partition)] = digest.hexdigest()
        return out

    def checked_digests(self, librdkafka_counts: dict[str, dict[str, int]], who: str) -> dict[str, dict[str, str]]:
        """The digests, if this evidence's record counts are librdkafka's (else none, with a warning)."""
        if not self.complete:
            log.info("kafka-eos: %s: no write evidence (%s)", who, self.reason)
            return {}
        if self.counts() != librdkafka_counts:
            log.warning("kafka-eos: %s: records per partition %s differ from librdkafka's %s; no write evidence",
                        who, self.counts(), librdkafka_counts)
            return {}
        return self.digests()
