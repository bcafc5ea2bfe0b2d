"""OutputAudit: the committed output against the sink log's evidence, batch by batch (``verify``).

Steps, per output partition, over its record batches in offset order (control batches too):
  1. attribute each transactional record batch to its producer (id, epoch); a producer's
     records up to its next control record (COMMIT or ABORT) are one transaction;
  2. a committed transaction whose (id, epoch) a committed batch's handle names is that batch's
     part of the partition: its first and last offset, its count and its ``record_digest``;
  3. any other record a ``read_committed`` reader sees (another producer's committed
     transaction, a non-transactional record) is foreign: it fails the batch whose records come
     next in the partition (or the newest batch), with its offset.
Then each batch: every handle's partition must have been found committed with the recorded count
and digest, and, where the handle has one, the digest of its records' timestamps (a record whose
CreateTime differs from what the task wrote fails the batch; a topic whose broker stamps records,
LogAppendTime, is not checked for it). A batch is "unverifiable" (never passed) when its handles carry no digest (written
before the evidence, or by a partitioner kafka-eos cannot predict), when the partition's
records before its part were deleted (retention, DeleteRecords: the log starts after where
the scan had to begin), or when its topic is compacted and its part no longer matches.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Protocol

from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.writer.record_digest import DIGEST_FORMAT, TIMESTAMP_FORMAT, PartitionDigest, TimestampDigest
from kafka_eos.txn.audit.record_set import RecordSet

PASSED, FAILED, UNVERIFIABLE = "verified", "failed", "cannot be verified"
LOG_APPEND_TIME = 1


class RawRecord(Protocol):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list


class RawBatch(Protocol):
    """A record batch as kafka-python's ``DefaultRecordBatch`` reads it."""
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    is_control_batch: bool
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime (the broker's clock: ``LOG_APPEND_TIME``)

    def __iter__(self): ...


@dataclass(frozen=True)
class Part:
    """One committed transaction's records in one partition, as found in the log."""
    first: int
    last: int
    records: int
    digest: str
    keyed: RecordSet | None = None    # with ``PartitionScan.sets``: its keyed records as a set
    keyless: RecordSet | None = None  # and its records without a key
    timestamps: str = ""              # the digest of its records' timestamps
    log_append: bool = False          # the broker stamped them (LogAppendTime): not the task's


@dataclass
class _Open:
    epoch: int
    first: int
    last: int = -1
    records: int = 0
    digest: PartitionDigest | None = None
    sets: tuple[RecordSet, RecordSet] | None = None  # keyed, keyless
    times: TimestampDigest | None = None
    log_append: bool = False


@dataclass
class PartitionScan:
    """What one partition holds between its scan start and end."""
    topic: str
    partition: int
    start: int
    log_start: int
    compacted: bool = False  # cleanup.policy has compact: records may be gone, so counts and digests cannot hold
    sets: bool = False       # also keep each expected transaction's records as ``RecordSet``s (--recompute)
    keep_all: bool = False   # every committed transaction is a found part (``follow_audit`` tells foreign ones)
    anchored: bool = False   # ``follow_audit``: a judged batch's records were found here (what precedes is placed)
    found: dict[tuple[int, int], Part] = field(default_factory=dict)   # (producer id, epoch) -> part
    aborted: dict[tuple[int, int], int] = field(default_factory=dict)  # -> first offset
    foreign: list[tuple[int, int, int]] = field(default_factory=list)  # (first offset, producer id, records)
    _open: dict[int, _Open] = field(default_factory=dict)

    def add(self, batch: RawBatch, expected: set[tuple[int, int]]) -> None:
        """Step 1-3 for one record batch."""
        pid, epoch = batch.producer_id, batch.producer_epoch
        records = [r for r in batch if r.offset >= self.start]
        if batch.is_control_batch:
            for record in records:
                self._end(pid, commit=getattr(record, "commit", False))
            return
        if not records:
            return
        if not batch.is_transactional:
            self.foreign.append((records[0].offset, pid, len(records)))
            return
        txn = self._open.get(pid)
        if txn is None:
            mine = self.keep_all or (pid, epoch) in expected
            txn = self._open[pid] = _Open(epoch, records[0].offset, digest=PartitionDigest() if mine else None,
                                          sets=(RecordSet(), RecordSet()) if mine and self.sets else None,
                                          times=TimestampDigest() if mine else None)
        txn.last, txn.records = records[-1].offset, txn.records + len(records)
        if txn.digest is not None and txn.times is not None:
            txn.log_append = txn.log_append or batch.timestamp_type == LOG_APPEND_TIME
            for r in records:
                txn.digest.add_record(r.key, r.value, r.headers)
                txn.times.add_record(r.timestamp)
        if txn.sets is not None:
            for r in records:
                txn.sets[r.key is None].add(r.key, r.value, r.headers)

    def _end(self, pid: int, commit: bool) -> None:
        txn = self._open.pop(pid, None)
        if txn is None:
            return
        key = (pid, txn.epoch)
        if not commit:
            self.aborted[key] = txn.first
        elif txn.digest is not None:
            keyed, keyless = txn.sets or (None, None)
            self.found[key] = Part(txn.first, txn.last, txn.records, txn.digest.hexdigest(), keyed, keyless,
                                   txn.times.hexdigest() if txn.times else "", txn.log_append)
        else:  # another writer's committed transaction: read_committed readers see it
            self.foreign.append((txn.first, pid, txn.records))

    def deleted_before(self) -> bool:
        """Records were deleted (the log no longer starts at 0) and the scan had to begin at the log
        start: what was looked for may have been among them."""
        return self.log_start > 0 and self.start <= self.log_start

    def still_open(self, key: tuple[int, int]) -> bool:
        txn = self._open.get(key[0])
        return txn is not None and txn.epoch == key[1]


@dataclass
class BatchVerdict:
    batch_id: int
    outcome: str
    records: int = 0
    problems: list[str] = field(default_factory=list)
    first_problem: dict | None = None  # topic, partition, offset of the first problem
    recomputed: int | None = None      # records the transform gave when re-run (``recompute_audit``)
    ranges: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)  # topic -> partition -> [first, last]s

    def fail(self, outcome: str, topic: str, partition: int, offset: int, problem: str) -> None:
        where = {"topic": topic, "partition": partition, "offset": offset}
        if self.first_problem is None or outcome == FAILED and self.outcome != FAILED:
            self.first_problem = where  # the first failure outranks an earlier "cannot be verified"
        if self.outcome != FAILED:
            self.outcome = outcome
        self.problems.append(f"{topic}[{partition}] offset {offset}: {problem}")


def committed_handles(handles: Iterable[TxnHandle]) -> list[TxnHandle]:
    return [h for h in handles if h.has_transaction]


def judge(batch_id: int, handles: list[TxnHandle], scans: dict[tuple[str, int], PartitionScan]) -> BatchVerdict:
    """One committed batch against what the scans found."""
    verdict = BatchVerdict(batch_id, PASSED, records=sum(h.records for h in handles))
    for handle in handles:
        key = (handle.producer_id, handle.producer_epoch)
        for topic, counts in sorted(handle.partitions.items()):
            for p, count in sorted(counts.items(), key=lambda kv: int(kv[0])):
                _judge_part(verdict, handle, key, topic, int(p), count, scans.get((topic, int(p))))
        if not handle.digests or handle.digest_format != DIGEST_FORMAT:
            topic, counts = next(iter(sorted(handle.partitions.items())), ("-", {"-1": 0}))
            why = (f"digest format {handle.digest_format!r} is not {DIGEST_FORMAT!r}" if handle.digest_format else
                   "written before kafka-eos recorded it, with writeEvidence=false, or with a partitioner "
                   "it cannot predict")
            verdict.fail(UNVERIFIABLE, topic, int(next(iter(counts))), -1,
                         f"sink partition {handle.sink_partition}: no write evidence ({why})")
    return verdict


def _judge_part(verdict: BatchVerdict, handle: TxnHandle, key: tuple[int, int], topic: str, p: int, count: int,
                scan: PartitionScan | None) -> None:
    who = f"sink partition {handle.sink_partition} (producer {key[0]} epoch {key[1]})"
    if scan is None:
        verdict.fail(UNVERIFIABLE, topic, p, -1, f"{who}: the partition was not read")
        return
    part = scan.found.get(key)
    if part is not None:
        verdict.ranges.setdefault(topic, {}).setdefault(str(p), []).append([part.first, part.last])
    if scan.compacted and (part is None or part.records != count or part.digest != handle.digests.get(topic, {}).get(str(p))):
        verdict.fail(UNVERIFIABLE, topic, p, part.first if part else scan.start, f"{who}: the topic is compacted "
                     "(cleanup.policy=compact), which removes records verify would need")
        return
    if part is None:
        if key in scan.aborted:
            verdict.fail(FAILED, topic, p, scan.aborted[key], f"{who}: its transaction is aborted in the log")
        elif scan.still_open(key):
            verdict.fail(FAILED, topic, p, scan._open[key[0]].first, f"{who}: its transaction is still open")
        elif scan.deleted_before():
            verdict.fail(UNVERIFIABLE, topic, p, scan.log_start, f"{who}: records before offset {scan.log_start} "
                         "were deleted (retention or DeleteRecords)")
        else:
            verdict.fail(FAILED, topic, p, scan.start, f"{who}: its {count} records are not in the log")
        return
    if part.records != count and scan.deleted_before() and part.first <= scan.log_start:
        verdict.fail(UNVERIFIABLE, topic, p, scan.log_start, f"{who}: its records before offset {scan.log_start} "
                     "were deleted (retention or DeleteRecords)")
        return
    if part.records != count:
        verdict.fail(FAILED, topic, p, part.first, f"{who}: {part.records} records in the log, {count} recorded")
    expected = handle.digests.get(topic, {}).get(str(p))
    if expected and part.digest != expected:
        verdict.fail(FAILED, topic, p, part.first, f"{who}: the records at {part.first}-{part.last} differ from "
                     "what the task wrote (digest)")
    _judge_timestamps(verdict, handle, who, topic, p, part)


def _judge_timestamps(verdict: BatchVerdict, handle: TxnHandle, who: str, topic: str, p: int, part: Part) -> None:
    """The part's record timestamps against the handle's digest of them, where it has one."""
    expected = handle.timestamp_digests.get(topic, {}).get(str(p))
    if not expected or part.log_append:  # librdkafka's or the broker's clock: nothing recorded to compare
        return
    if handle.timestamp_format != TIMESTAMP_FORMAT:
        verdict.fail(UNVERIFIABLE, topic, p, part.first, f"{who}: timestamp digest format "
                     f"{handle.timestamp_format!r} is not {TIMESTAMP_FORMAT!r}")
    elif part.timestamps != expected:
        verdict.fail(FAILED, topic, p, part.first, f"{who}: the timestamps of the records at {part.first}-"
                     f"{part.last} differ from what the task wrote (timestamp digest)")


def place_foreign(verdicts: dict[int, BatchVerdict], handles: dict[int, list[TxnHandle]],
                  scans: dict[tuple[str, int], PartitionScan]) -> list[str]:
    """Step 3: a foreign record between the first and the last verified record of its partition
    fails the batch whose records follow it; the others (before or after the batches verified)
    are returned, to be reported."""
    outside: list[str] = []
    for (topic, p), scan in scans.items():
        parts = sorted((part.first, part.last, batch_id) for batch_id, hs in handles.items() for h in hs
                       if (part := scan.found.get((h.producer_id, h.producer_epoch))) is not None)
        for offset, pid, records in scan.foreign:
            what = f"{records} record(s) of another writer (producer {pid}) that read_committed readers see"
            if not parts or offset < parts[0][0] or offset > max(last for _, last, _ in parts):
                outside.append(f"{topic}[{p}] offset {offset}: {what}")
                continue
            inside = [b for first, last, b in parts if first <= offset <= last]
            batch_id = inside[0] if inside else next(b for first, _, b in parts if first > offset)
            verdicts[batch_id].fail(FAILED, topic, p, offset, what)
    return outside
