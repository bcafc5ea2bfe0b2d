"""Which partition each record goes to, chosen by the sink before it produces (so the task knows
every record's partition and can record what it wrote there: ``write_evidence``).

Enforced here: the choice is exactly librdkafka's for the partitioners it supports
(``SUPPORTED``), computed over a whole Arrow column at once:
- a record with a key: ``(murmur2(key) & 0x7fffffff) % partitions``, the Java client's and
  librdkafka's ``murmur2`` / ``murmur2_random`` (``tests/txn/writer/test_record_partitioner.py`` checks
  it against kafka-python's murmur2 and against librdkafka's own choice on a real broker);
- a record without a key: ``murmur2`` hashes an empty key, as librdkafka does;
  ``murmur2_random`` (librdkafka: a random partition, sticky for ``sticky.partitioning.linger.ms``)
  puts the call's keyless records in one partition picked at random, as a sticky partitioner does.
Another partitioner (a user's ``kafka.partitioner``) is left to librdkafka: ``choose`` returns None.
"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

SUPPORTED = ("murmur2_random", "murmur2")
_SEED = np.uint32(0x9747B28C)
_M = np.uint32(0x5BD1E995)


def binary_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start offsets, lengths, data bytes) of a binary or string column; nulls have length -1."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        values = values.cast(pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary())
    valid = None if values.null_count == 0 else np.asarray(values.is_valid().to_numpy(zero_copy_only=False))
    if valid is not None:
        values = values.fill_null(b"")
    width = np.int64 if pa.types.is_large_binary(values.type) else np.int32
    _, offsets_buf, data_buf = values.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=width)[values.offset:values.offset + len(values) + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    if valid is not None:
        lengths = np.where(valid, lengths, -1)
    return offsets[:-1], lengths, data


def murmur2(values: pa.Array) -> np.ndarray:
    """Kafka's murmur2 (the Java client's ``Utils.murmur2``) of each value, as uint32; a null
    value hashes as an empty one."""
    starts, lengths, data = binary_parts(values)
    lengths = np.maximum(lengths, 0)
    h = _SEED ^ lengths.astype(np.uint32)
    blocks = lengths // 4
    everyone = int(blocks.min(initial=0))  # blocks every value has: no row selection needed
    for i in range(int(blocks.max(initial=0))):
        rows = slice(None) if i < everyone else np.flatnonzero(blocks > i)
        at = starts[rows] + 4 * i
        k = (data[at].astype(np.uint32) | (data[at + 1].astype(np.uint32) << 8)
             | (data[at + 2].astype(np.uint32) << 16) | (data[at + 3].astype(np.uint32) << 24))
        k *= _M
        k ^= k >> np.uint32(24)
        k *= _M
        h[rows] = (h[rows] * _M) ^ k
    tail, base = lengths & 3, starts + (lengths & ~3)
    for n, shift in ((3, 16), (2, 8), (1, 0)):
        rows = np.flatnonzero(tail >= n)
        h[rows] ^= data[base[rows] + n - 1].astype(np.uint32) << np.uint32(shift)
    rows = np.flatnonzero(tail > 0)
    h[rows] *= _M
    h ^= h >> np.uint32(13)
    h *= _M
    h ^= h >> np.uint32(15)
    return h


def choose(keys: pa.Array, partition_count: int, partitioner: str,
           rng: random.Random | None = None) -> np.ndarray | None:
    """The partition of each record (int32) as ``partitioner`` would choose it among
    ``partition_count``; None for a partitioner not in ``SUPPORTED``."""
    if partitioner not in SUPPORTED:
        return None
    chosen = ((murmur2(keys) & np.uint32(0x7FFFFFFF)) % np.uint32(partition_count)).astype(np.int32)
    if partitioner == "murmur2_random" and keys.null_count:
        keyless = np.asarray(keys.is_null().to_numpy(zero_copy_only=False))
        chosen[keyless] = (rng or random).randrange(partition_count)
    return chosen
