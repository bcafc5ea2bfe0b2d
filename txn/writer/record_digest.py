"""The digest of a sequence of Kafka records, in order (key, value, headers): what a transaction
wrote to one partition, computed by the sink task as it produces (whole Arrow columns at once)
and by ``verify`` as it reads the partition back (record by record). Both give the same value.

``DIGEST_FORMAT`` names the hash and this layout; a change of either is a new name. The records
are split into nine byte streams, each hashed with xxHash's XXH3-64 (``xxhash``):
  key lengths, key bytes, value lengths, value bytes, header counts, header name lengths,
  header name bytes (UTF-8), header value lengths, header value bytes;
lengths are little-endian int32, -1 for a null; a record without headers has count 0. The
digest is XXH3-64 of the nine 8-byte digests and the record count (int64), in hex. The lengths
and the concatenated bytes of a stream fix its sequence, so the digest is a digest of the
ordered records. It detects change, loss, duplication and reordering, not tampering.

The records' timestamps (CreateTime, epoch ms) have a digest of their own, ``TIMESTAMP_FORMAT``
(``TimestampDigest``): XXH3-64 of the little-endian int64 timestamps in order and the record count
(int64), in hex. It is apart from the record digest so that the record digest's format, and the
evidence written before timestamps were chosen, stay as they are, and so that a topic whose broker
stamps records itself (``message.timestamp.type=LogAppendTime``) still has its records verified.
"""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import xxhash

from kafka_eos.txn.writer.record_partitioner import binary_parts

DIGEST_FORMAT = "xxh3_64/kafka-eos-1"
TIMESTAMP_FORMAT = "xxh3_64/kafka-eos-timestamps-1"
_I64 = struct.Struct("<q")
_STREAMS = 9
_I32 = struct.Struct("<i")


def _bytes_of(starts: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> memoryview:
    """The concatenated bytes of a column, not copied (nulls contribute nothing)."""
    if len(starts) == 0:
        return memoryview(b"")
    begin, end = int(starts[0]), int(starts[-1] + max(int(lengths[-1]), 0))
    return data[begin:end].data


class PartitionDigest:
    """The running digest of one partition's records, in the order added."""

    def __init__(self) -> None:
        self._streams = [xxhash.xxh3_64() for _ in range(_STREAMS)]
        self.records = 0

    def add_columns(self, keys: pa.Array, values: pa.Array, headers: pa.Array | None) -> None:
        """Records as Arrow columns of one length: binary or string keys and values, headers
        ``list<struct<key: string, value: binary>>`` or None (no headers)."""
        n = len(values)
        for lens_at, column in ((0, keys), (2, values)):
            starts, lengths, data = binary_parts(column)
            self._streams[lens_at].update(lengths.astype("<i4").tobytes())
            self._streams[lens_at + 1].update(_bytes_of(starts, lengths, data))
        if headers is None:
            self._streams[4].update(np.zeros(n, "<i4").tobytes())
        else:
            counts = pa.compute.list_value_length(headers).fill_null(0)
            self._streams[4].update(counts.to_numpy(zero_copy_only=False).astype("<i4").tobytes())
            flat = pa.compute.list_flatten(headers)
            for lens_at, name in ((5, "key"), (7, "value")):
                starts, lengths, data = binary_parts(pa.compute.struct_field(flat, name))
                self._streams[lens_at].update(lengths.astype("<i4").tobytes())
                self._streams[lens_at + 1].update(_bytes_of(starts, lengths, data))
        self.records += n

    def add_record(self, key: bytes | None, value: bytes | None, headers) -> None:
        """One record as a consumer returns it: headers a list of (name, value) pairs, or None."""
        s = self._streams
        for lens_at, field in ((0, key), (2, value)):
            s[lens_at].update(_I32.pack(-1 if field is None else len(field)))
            if field:
                s[lens_at + 1].update(field)
        s[4].update(_I32.pack(len(headers) if headers else 0))
        for name, hvalue in headers or ():
            raw = name.encode() if isinstance(name, str) else name
            s[5].update(_I32.pack(len(raw)))
            s[6].update(raw)
            s[7].update(_I32.pack(-1 if hvalue is None else len(hvalue)))
            if hvalue:
                s[8].update(hvalue)
        self.records += 1

    def hexdigest(self) -> str:
        final = xxhash.xxh3_64()
        for stream in self._streams:
            final.update(stream.digest())
        final.update(struct.pack("<q", self.records))
        return final.hexdigest()


class TimestampDigest:
    """The running digest of one partition's record timestamps (epoch ms), in the order added."""

    def __init__(self) -> None:
        self._stream = xxhash.xxh3_64()
        self.records = 0

    def add_column(self, timestamps: pa.Array) -> None:
        """An int64 column of epoch ms without nulls."""
        self._stream.update(timestamps.to_numpy(zero_copy_only=False).astype("<i8").tobytes())
        self.records += len(timestamps)

    def add_record(self, timestamp: int) -> None:
        self._stream.update(_I64.pack(timestamp))
        self.records += 1

    def hexdigest(self) -> str:
        final = xxhash.xxh3_64(self._stream.digest())
        final.update(_I64.pack(self.records))
        return final.hexdigest()
