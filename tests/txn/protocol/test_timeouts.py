"""The transaction.timeout.ms rule: above trigger + margin, within the broker maximum."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.timeouts import check_transaction_timeout


@pytest.mark.parametrize("timeout,trigger,broker,broken", [
    (60_000, 5_000, 900_000, 0),
    (10_000, 5_000, 900_000, 1),       # not above trigger + margin
    (1_000_000, 5_000, 900_000, 1),    # above the broker maximum
    (4_000, 5_000, 3_000, 2),
    (60_000, 5_000, None, 0),          # offline: broker maximum unknown
])
def test_timeout_ordering(timeout, trigger, broker, broken):
    violations = check_transaction_timeout(timeout, trigger, 30_000, broker)
    assert len(violations) == broken
    assert all("transaction.timeout.ms" in str(v) and "Fix:" in str(v) for v in violations)
