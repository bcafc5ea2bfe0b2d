"""TxnHandle: a serialisable, versioned pre-committed transaction."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.handle import TxnHandle
from tests.txn.fakes import handle


def test_handle_round_trip_and_version():
    h = handle(2)
    assert TxnHandle.from_dict(h.to_dict()) == h
    with pytest.raises(ValueError, match="format 99"):
        TxnHandle.from_dict({**h.to_dict(), "v": 99})
    assert not TxnHandle.empty(1).has_transaction


def test_timestamp_digests_make_a_format_3_handle_and_handles_without_them_keep_format_2_and_1():
    plain = TxnHandle(sink_partition=0, transactional_id="t", records=1, partitions={"o": {"0": 1}})
    digested = TxnHandle(**{**plain.__dict__, "digests": {"o": {"0": "ab"}}, "digest_format": "xxh3_64/kafka-eos-1"})
    timed = TxnHandle(**{**digested.__dict__, "timestamp_digests": {"o": {"0": "cd"}},
                         "timestamp_format": "xxh3_64/kafka-eos-timestamps-1"})
    assert [h.to_dict()["v"] for h in (plain, digested, timed)] == [1, 2, 3]
    assert TxnHandle(**{**plain.__dict__, "earliest_timestamp_ms": 5}).to_dict()["v"] == 3
    assert "timestamp_digests" not in digested.to_dict(), "what an earlier build reads, unchanged"
    for h in (plain, digested, timed):
        assert TxnHandle.from_dict(h.to_dict()) == h
    earlier = {"v": 2, "sink_partition": 0, "transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "records": 1,
               "partitions": {"o": {"0": 1}}, "precommit_ms": 1.0, "skipped": False, "digests": {"o": {"0": "ab"}},
               "digest_format": "xxh3_64/kafka-eos-1"}
    assert TxnHandle.from_dict(earlier).timestamp_digests == {}, "a record written before still reads"
