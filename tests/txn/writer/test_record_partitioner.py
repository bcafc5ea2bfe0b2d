"""The sink's own choice of partition is librdkafka's (murmur2: the Java client's)."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
from kafka.partitioner.default import murmur2 as java_murmur2

from kafka_eos.txn.writer.record_partitioner import choose, murmur2


def _keys(n: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 41))) for _ in range(n)]


def test_murmur2_of_every_length_is_the_java_clients():
    keys = _keys(4000)
    expected = np.array([java_murmur2(k) & 0xFFFFFFFF for k in keys], dtype=np.uint32)
    assert (murmur2(pa.array(keys, pa.binary())) == expected).all()
    assert (murmur2(pa.array(keys, pa.large_binary()).slice(11, 500)) == expected[11:511]).all()
    text = ["héllo", "", "order-17"]
    assert murmur2(pa.array(text)).tolist() == [java_murmur2(t.encode()) & 0xFFFFFFFF for t in text]


def test_keyed_records_go_where_the_java_client_puts_them():
    keys = _keys(1000, seed=3)
    chosen = choose(pa.array(keys, pa.binary()), 12, "murmur2_random")
    assert chosen is not None
    assert chosen.tolist() == [(java_murmur2(k) & 0x7FFFFFFF) % 12 for k in keys]


def test_keyless_records_stick_to_one_partition_or_hash_as_empty():
    keys = pa.array([b"a", None, None, b"b", None], pa.binary())
    sticky = choose(keys, 8, "murmur2_random", random.Random(5))
    assert sticky is not None and len({sticky[i] for i in (1, 2, 4)}) == 1
    plain = choose(keys, 8, "murmur2")
    assert plain is not None and plain[1] == (java_murmur2(b"") & 0x7FFFFFFF) % 8


def test_a_partitioner_it_cannot_predict_is_left_to_librdkafka():
    assert choose(pa.array([b"a"]), 3, "consistent_random") is None
