"""The digest is one value whether computed over Arrow columns (the task) or record by record (verify)."""
from __future__ import annotations

import random

import pyarrow as pa

from kafka_eos.txn.writer.record_digest import PartitionDigest
from kafka_eos.txn.writer.write_evidence import HEADERS_TYPE


def _records(n: int = 200, seed: int = 2) -> list:
    rng = random.Random(seed)

    def blob(k: int) -> bytes:
        return bytes(rng.randrange(256) for _ in range(k))

    return [(None if i % 7 == 0 else blob(rng.randrange(12)), None if i % 11 == 0 else blob(rng.randrange(60)),
             None if i % 3 == 0 else [(f"h{j}", None if j == 1 else blob(j)) for j in range(rng.randrange(3))])
            for i in range(n)]


def _by_record(records) -> str:
    digest = PartitionDigest()
    for key, value, headers in records:
        digest.add_record(key, value, headers)
    return digest.hexdigest()


def _by_columns(records, cuts) -> str:
    digest = PartitionDigest()
    for lo, hi in zip([0, *cuts], [*cuts, len(records)], strict=True):
        part = records[lo:hi]
        digest.add_columns(pa.array([r[0] for r in part], pa.binary()), pa.array([r[1] for r in part], pa.binary()),
                           pa.array([[{"key": k, "value": v} for k, v in r[2]] if r[2] is not None else None
                                     for r in part], HEADERS_TYPE))
    return digest.hexdigest()


def test_columns_in_any_chunks_and_records_one_by_one_give_one_digest():
    records = _records()
    assert _by_columns(records, [50, 51, 199]) == _by_columns(records, [120]) == _by_record(records)


def test_a_changed_missing_doubled_or_moved_record_changes_the_digest():
    records = _records()
    base = _by_record(records)
    changed = [*records[:5], (records[5][0], b"other", records[5][2]), *records[6:]]
    variants = [changed, records[1:], [records[0], *records], [records[1], records[0], *records[2:]],
                [(b"", v, h) if k is None else (k, v, h) for k, v, h in records]]  # a null key is not an empty one
    assert all(_by_record(v) != base for v in variants)
