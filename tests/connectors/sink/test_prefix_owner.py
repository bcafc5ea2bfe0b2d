"""The sink's query-start ownership without a cluster: retired checkpoints, the id scheme, the opt-out."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.sink import prefix_owner
from kafka_eos.txn.log import sink_markers
from kafka_eos.txn.protocol.errors import CheckpointRetiredError, SinkConfigError
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.protocol.transactional_ids import owner_of


def config(tmp_path, **kw) -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "127.0.0.1:1"}, transactional_id_prefix="orders",
                      log_location=str(tmp_path / "ck" / "kafka-eos-sink"), **kw)


def options(tmp_path, **extra) -> dict:
    return {"checkpointLocation": str(tmp_path / "ck"), "prefixClaim": "off", **extra}


def test_a_new_checkpoint_writes_owner_ids_of_its_query(tmp_path):
    owned = prefix_owner.owned_config(config(tmp_path), options(tmp_path), "query-1")
    assert owned.id_owner == owner_of("query-1")
    assert owned.ids.id_for(0, 0) == f"orders-{owner_of('query-1')}-0-0"


def test_a_retired_checkpoint_is_refused_naming_the_marker(tmp_path):
    cfg = config(tmp_path)
    sink_markers.mark_retired(cfg.log_location, "2026-01-01T00:00:00+00:00", "h")
    with pytest.raises(CheckpointRetiredError, match="retired at 2026-01-01.*_retired.json"):
        prefix_owner.owned_config(cfg, options(tmp_path), "query-2")


def test_at_least_once_claims_nothing(tmp_path):
    cfg = config(tmp_path, exactly_once=False)
    assert prefix_owner.owned_config(cfg, options(tmp_path, prefixClaim="broker"), "query-3") == cfg
    assert sink_markers.read_id_scheme(cfg.log_location) is None


def test_claim_settings_default_and_refusal():
    assert prefix_owner.claim_settings({}) == (True, "_kafka_eos_prefix_claims")
    assert prefix_owner.claim_settings({"PREFIXCLAIM": "off", "prefixClaimTopic": "t"}) == (False, "t")
    with pytest.raises(SinkConfigError, match="prefixClaim"):
        prefix_owner.claim_settings({"prefixClaim": "maybe"})


def test_the_checkpoint_identity_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert prefix_owner.checkpoint_identity({"checkpointLocation": "ck/"}, "x") == str(tmp_path / "ck")
    assert prefix_owner.checkpoint_identity({}, "s3a://b/log") == "s3a://b/log"
