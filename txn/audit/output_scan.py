"""Reads output partitions record batch by record batch (control batches too) for ``OutputAudit``.

Enforced here: reads only (Fetch, ListOffsets, DescribeConfigs); memory stays bounded by one fetch
(``FETCH_BYTES``) plus the open transactions' running digests; each partition is read from its
start (the offset of ``start_ms``, else the log start) to its high watermark as the scan began.
``start_ms`` (``scan_start_ms``) is before every record the batches wrote: a transaction's records are
stamped before its commit, at most the transaction timeout before, unless the task chose their
timestamps (a timestamp column, a copy's source timestamps), which may be any older: then its
handle's ``earliest_timestamp_ms`` bounds it (ListOffsets by time gives the first offset whose
timestamp is at or after it, which is at or before each of those records).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol, Sequence

from kafka_eos import KafkaEosError
from kafka_eos.txn.audit.output_audit import PartitionScan
from kafka_eos.txn.protocol.handle import TxnHandle

FETCH_BYTES = 4 << 20
PROGRESS_EVERY = 200_000  # offsets between progress lines of a long partition
EARLIEST, LATEST = -2, -1  # ListOffsets' timestamps for the log start and the high watermark


class ScanError(KafkaEosError, RuntimeError):
    """An output partition could not be read; the message names it."""


class OutputReader(Protocol):
    def fetch_raw(self, topic: str, partition: int, offset: int, max_bytes: int) -> tuple[int, int, int, bytes]: ...

    def list_partition_offsets(self, specs: dict) -> dict: ...


@dataclass(frozen=True)
class Bounds:
    start: int
    log_start: int
    end: int


def scan_start_ms(committed_at_ms: Sequence[int | None], handles: Iterable[TxnHandle], transaction_timeout_ms: int,
                  margin_ms: int) -> int | None:
    """The time before every record of batches committed at ``committed_at_ms`` with ``handles``
    (None: a commit time is unknown, read from the log start)."""
    if not committed_at_ms or None in committed_at_ms:
        return None
    start = min(t for t in committed_at_ms if t is not None) - transaction_timeout_ms - margin_ms
    return min([start, *(h.earliest_timestamp_ms for h in handles if h.earliest_timestamp_ms is not None)])


def bounds(reader: OutputReader, partitions: Iterable[tuple[str, int]], start_ms: int | None) -> dict[tuple[str, int], Bounds]:
    """Per partition: where to begin (the first offset at or after ``start_ms``), the log start, the end."""
    from kafka import TopicPartition
    tps = [TopicPartition(t, p) for t, p in partitions]

    def offsets(spec: int) -> dict[tuple[str, int], int]:
        found = reader.list_partition_offsets({tp: spec for tp in tps})
        return {(tp.topic, tp.partition): found[tp].offset for tp in tps}

    earliest, latest = offsets(EARLIEST), offsets(LATEST)
    at_time = offsets(start_ms) if start_ms is not None else earliest
    return {k: Bounds(start=latest[k] if at_time[k] < 0 else at_time[k], log_start=earliest[k], end=latest[k])
            for k in earliest}


def compacted_topics(conf: Mapping[str, str], topics: Iterable[str], warn: Callable[[str], None],
                     timeout_s: float = 10.0) -> set[str]:
    """The topics whose ``cleanup.policy`` includes ``compact`` (DescribeConfigs); a topic whose
    policy cannot be read is taken as not compacted, with a warning (a compacted part then fails)."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    from kafka_eos.txn.cluster.broker_configs import admin_client
    admin = admin_client(conf)
    resources = {topic: ConfigResource(ResourceType.TOPIC, topic) for topic in topics}
    futures = admin.describe_configs(list(resources.values()), request_timeout=timeout_s)
    out = set()
    for topic, resource in resources.items():
        try:
            entry = futures[resource].result(timeout_s).get("cleanup.policy")
        except Exception as exc:  # noqa: BLE001 - named in the warning
            warn(f"{topic}: its cleanup.policy could not be read ({exc}); taken as not compacted - grant "
                 "DescribeConfigs on the topic to tell compaction from loss")
            continue
        if entry is not None and "compact" in (entry.value or ""):
            out.add(topic)
    return out


def scan_partition(reader: OutputReader, topic: str, partition: int, where: Bounds, expected: set[tuple[int, int]],
                   progress: Callable[[str], None] = lambda line: None, compacted: bool = False,
                   sets: bool = False) -> PartitionScan:
    """Every record batch of one partition from ``where.start`` to ``where.end``, attributed (with
    ``sets``, the expected transactions' records also as record sets: ``PartitionScan.sets``)."""
    scan = PartitionScan(topic, partition, where.start, where.log_start, compacted, sets)
    read_into(reader, scan, max(where.start, where.log_start), where.end, expected, progress)
    return scan


def read_into(reader: OutputReader, scan: PartitionScan, offset: int, end: int, expected: set[tuple[int, int]],
              progress: Callable[[str], None] = lambda line: None) -> int:
    """Add the record batches of ``scan``'s partition from ``offset`` to ``end`` to it (a scan kept
    open goes on from where it stopped); returns the offset the next read begins at."""
    from kafka.record import MemoryRecords
    topic, partition = scan.topic, scan.partition
    shown = offset
    while offset < end:
        error, _, log_start, raw = reader.fetch_raw(topic, partition, offset, FETCH_BYTES)
        if error:
            raise ScanError(f"{topic}[{partition}]: Fetch at offset {offset} failed with error code {error}; "
                            "check the brokers and that this login may read the topic")
        scan.log_start = max(scan.log_start, log_start)
        records, before = MemoryRecords(raw), offset
        try:
            batch = records.next_batch()
            while batch is not None:
                scan.add(batch, expected)
                offset = max(offset, batch.next_offset)
                batch = records.next_batch()
        except Exception as exc:  # noqa: BLE001 - e.g. a compression codec kafka-python cannot read here
            raise ScanError(f"{topic}[{partition}]: cannot read the record batch at offset {offset} ({exc}); "
                            "install the codec's Python package (lz4, zstandard or python-snappy)") from exc
        if offset == before:
            raise ScanError(f"{topic}[{partition}]: no record batch at offset {offset} below the end {end}")
        if offset - shown >= PROGRESS_EVERY:
            progress(f"{topic}[{partition}] read up to offset {offset:,} of {end:,}")
            shown = offset
    return offset
