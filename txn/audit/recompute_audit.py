"""RecomputeAudit: a batch's committed records against its transform re-run over the batch's
recorded input (``verify --recompute``), after ``output_audit`` judged the batch.

Steps, per batch ``output_audit`` verified:
  1. the committed side: the batch's transactions found in the log, as ``RecordSet``s per output
     topic and partition; records without a key per topic only (a keyless record's partition is
     chosen at random, so only its topic is reproducible);
  2. the recomputed side, the same buckets from the re-run;
  3. every bucket must be equal; each unequal one fails the batch at the first offset of the
     batch's records in that partition (or in that topic, for records without a key), unless an
     input topic is compacted: then the batch "cannot be verified" (compaction may have removed
     records it read).
A batch the re-run did not reach is "cannot be verified" with the reason, never passed. A batch
``output_audit`` did not verify keeps its verdict: its committed side is not whole.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.audit.output_audit import FAILED, PASSED, UNVERIFIABLE, BatchVerdict, Part, PartitionScan
from kafka_eos.txn.audit.record_set import RecordSet

Bucket = tuple[str, "int | None"]  # (topic, partition); partition None: the topic's records without a key


def _parts(handles: list[TxnHandle], scans: Mapping[tuple[str, int], PartitionScan]):
    for handle in handles:
        key = (handle.producer_id, handle.producer_epoch)
        for topic, counts in handle.partitions.items():
            for p in counts:
                scan = scans.get((topic, int(p)))
                part = scan.found.get(key) if scan is not None else None
                if part is not None:
                    yield topic, int(p), part


def committed_sets(handles: list[TxnHandle], scans: Mapping[tuple[str, int], PartitionScan]) -> dict[Bucket, RecordSet]:
    """Step 1: the batch's committed records per bucket (non-empty buckets only)."""
    out: dict[Bucket, RecordSet] = {}
    for topic, p, part in _parts(handles, scans):
        for bucket, found in (((topic, p), part.keyed), ((topic, None), part.keyless)):
            if found is not None and found.records:
                out.setdefault(bucket, RecordSet()).merge(found)
    return out


def _first_offsets(handles: list[TxnHandle], scans: Mapping[tuple[str, int], PartitionScan]) -> dict[Bucket, tuple[int, int]]:
    """Per bucket, the (partition, offset) where the batch's records begin."""
    out: dict[Bucket, tuple[int, int]] = {}
    for topic, p, part in _parts(handles, scans):
        for bucket in ((topic, p), (topic, None)):
            out[bucket] = min(out.get(bucket, (p, part.first)), (p, part.first), key=lambda at: at[1])
    return out


def judge_recomputed(verdict: BatchVerdict, handles: list[TxnHandle], scans: Mapping[tuple[str, int], PartitionScan],
                     recomputed: Mapping[Bucket, RecordSet] | None, reason: str = "",
                     compacted_inputs: Iterable[str] = ()) -> None:
    """Steps 2-3 for one batch; ``recomputed`` None: the re-run did not reach it (``reason``). With
    ``compacted_inputs`` (input topics whose cleanup.policy compacts), a difference cannot be told
    from records compaction removed since the batch ran: "cannot be verified", not failed."""
    if verdict.outcome != PASSED:
        return
    if recomputed is None:
        topic = next(iter(sorted(t for h in handles for t in h.partitions)), "-")
        verdict.fail(UNVERIFIABLE, topic, -1, -1, f"not recomputed: {reason}")
        return
    verdict.recomputed = sum(s.records for s in recomputed.values())
    committed = committed_sets(handles, scans)
    starts = _first_offsets(handles, scans)
    for bucket in sorted(set(committed) | set(recomputed), key=lambda b: (b[0], -1 if b[1] is None else b[1])):
        was, now = committed.get(bucket, RecordSet()), recomputed.get(bucket, RecordSet())
        if was == now:
            continue
        topic, p = bucket
        partition, offset = starts.get(bucket, (-1 if p is None else p, -1))
        what = f"records of {topic}" + (" without a key" if p is None else f"[{p}]")
        differs = (f"the committed {what} ({was.records}) are not what the transform gives when re-run over the "
                   f"batch's input ({now.records})")
        compacted = sorted(compacted_inputs)
        if compacted:
            verdict.fail(UNVERIFIABLE, topic, partition, offset, f"{differs}; the input topic(s) {', '.join(compacted)} "
                         "are compacted (cleanup.policy=compact), which may have removed records the batch read")
        else:
            verdict.fail(FAILED, topic, partition, offset, differs)


__all__ = ["Bucket", "Part", "committed_sets", "judge_recomputed"]
