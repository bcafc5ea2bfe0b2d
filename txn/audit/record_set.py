"""RecordSet: an order-independent digest of a set of Kafka records (key, value, headers), for
``verify --recompute``: what a batch committed to one output partition against what its transform
gives when re-run over the batch's recorded input. The order of records across a batch's tasks is
not reproducible (several transactions interleave in a partition; a window's rows come out of
state in any order), so this compares sets with their multiplicities, not sequences.

``RECORD_SET_FORMAT`` names the hash and this layout; a change of either is a new name. Each
record is hashed with xxHash's XXH3-128 over: key length, key bytes, value length, value bytes,
header count, then each header's name length, name (UTF-8), value length, value bytes (lengths
little-endian int32, -1 for a null). The set's digest is the record count and the sum of the
records' hashes modulo 2**128: adding one record changes it, and so does a changed, missing or
doubled one. It detects change, loss and duplication, not tampering.
"""
from __future__ import annotations

import struct
from typing import Any, Iterable

import pyarrow as pa
import xxhash

RECORD_SET_FORMAT = "xxh3_128-sum/kafka-eos-1"
_MOD = 1 << 128
_I32 = struct.Struct("<i")


def _field(out: list[bytes], value: bytes | None) -> None:
    out.append(_I32.pack(-1 if value is None else len(value)))
    if value:
        out.append(value)


def record_hash(key: bytes | str | None, value: bytes | str | None, headers: Iterable[Any] | None) -> int:
    """XXH3-128 of one record; headers are (name, value) pairs or ``{"key", "value"}`` dicts."""
    out: list[bytes] = []
    _field(out, key.encode() if isinstance(key, str) else key)
    _field(out, value.encode() if isinstance(value, str) else value)
    pairs = [(h["key"], h["value"]) if isinstance(h, dict) else tuple(h) for h in headers or ()]
    out.append(_I32.pack(len(pairs)))
    for name, hvalue in pairs:
        raw = name.encode() if isinstance(name, str) else name
        _field(out, raw)
        _field(out, hvalue.encode() if isinstance(hvalue, str) else hvalue)
    return xxhash.xxh3_128_intdigest(b"".join(out))


class RecordSet:
    """The running digest of a set of records (any order)."""

    __slots__ = ("records", "total")

    def __init__(self, records: int = 0, total: int = 0) -> None:
        self.records, self.total = records, total % _MOD

    def add(self, key: bytes | str | None, value: bytes | str | None, headers: Iterable[Any] | None) -> None:
        self.records += 1
        self.total = (self.total + record_hash(key, value, headers)) % _MOD

    def add_columns(self, keys: pa.Array, values: pa.Array, headers: pa.Array | None) -> None:
        """Records as Arrow columns of one length (as the sink gets them)."""
        header_rows = headers.to_pylist() if headers is not None else [None] * len(values)
        for key, value, row_headers in zip(keys.to_pylist(), values.to_pylist(), header_rows, strict=True):
            self.add(key, value, row_headers)

    def merge(self, other: "RecordSet") -> "RecordSet":
        self.records += other.records
        self.total = (self.total + other.total) % _MOD
        return self

    def text(self) -> str:
        """``<records>:<sum in hex>``, as a report or a Spark row carries it."""
        return f"{self.records}:{self.total:032x}"

    @classmethod
    def parse(cls, text: str) -> "RecordSet":
        records, _, total = text.partition(":")
        return cls(int(records), int(total, 16))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RecordSet) and (self.records, self.total) == (other.records, other.total)

    def __hash__(self) -> int:
        return hash((self.records, self.total))

    def __repr__(self) -> str:
        return f"RecordSet({self.text()})"
