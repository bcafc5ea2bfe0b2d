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
