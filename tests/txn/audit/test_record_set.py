"""RecordSet: an order-independent digest of records (pure logic)."""
from __future__ import annotations

import pyarrow as pa

from kafka_eos.txn.audit.record_set import RecordSet

RECORDS = [(b"k1", b"v1", [("h", b"x")]), (None, b"v2", None), (b"k3", None, []), (b"", b"", [("h", None)])]


def set_of(records) -> RecordSet:
    out = RecordSet()
    for key, value, headers in records:
        out.add(key, value, headers)
    return out


def test_the_same_records_in_any_order_give_the_same_set():
    assert set_of(RECORDS) == set_of(reversed(RECORDS))
    assert set_of(RECORDS[:2]).merge(set_of(RECORDS[2:])) == set_of(RECORDS)


def test_a_changed_missing_or_doubled_record_changes_it():
    base = set_of(RECORDS)
    assert set_of(RECORDS[:-1]) != base
    assert set_of(RECORDS + RECORDS[:1]) != base
    assert set_of([(b"k1", b"v1!", [("h", b"x")])] + RECORDS[1:]) != base
    assert set_of([(None, b"v1", [("h", b"x")])] + RECORDS[1:]) != base, "a null key is not the same record"
    assert set_of([(b"", b"v2", None)]) != set_of([(None, b"v2", None)]), "an empty key is not a null one"
    assert set_of([(b"k", b"v", [("h", b"")])]) != set_of([(b"k", b"v", [("h", None)])])
    swapped = set_of([(b"ab", b"c", None)])
    assert swapped != set_of([(b"a", b"bc", None)]), "bytes do not move between key and value"


def test_arrow_columns_give_what_records_give_and_text_round_trips():
    keys = pa.array(["k1", None, "k3", ""], pa.string())
    values = pa.array([b"v1", b"v2", None, b""], pa.binary())
    headers = pa.array([[{"key": "h", "value": b"x"}], None, [], [{"key": "h", "value": None}]],
                       pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
    columns = RecordSet()
    columns.add_columns(keys, values, headers)
    assert columns == set_of(RECORDS)
    assert RecordSet.parse(columns.text()) == columns and columns.records == 4
