"""Sink start checks that need no cluster."""
from __future__ import annotations

import pytest

from kafka_eos.txn.errors import SinkConfigError


def test_speculation_is_refused_with_the_setting_named():
    from kafka_eos.connectors.sink.startup_checks import check_speculation
    check_speculation(None)
    check_speculation("false")
    with pytest.raises(SinkConfigError, match="spark.speculation=false"):
        check_speculation("true")
