"""Issue 63: a pipeline whose own records are kept in Kafka (``checkpoint.records: kafka``), Spark's
checkpoint on local disk: ``store_cells``'s cell (killed after batch 1's decision and after batch
3's EndTxn round, each restart recovering; verify; stop/resume; every id exactly once). The sink
log's folder (nor the shape records') must not appear at the checkpoint location: the store topic
holds the records."""
from __future__ import annotations

import re
import time

import pytest
import yaml

from integration_tests.kafka_tools import read_all, unique
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.store_cells import Store, run_cell
from kafka_eos.txn.log.kafka_store import store_topic


@pytest.mark.slow
@pytest.mark.long  # minutes: make long (CI, after make test)
def test_records_kept_in_kafka_are_exactly_once_through_driver_kills(bootstrap, tmp_path, record_property):
    checkpoints = tmp_path / unique("ck")
    began = time.monotonic()
    figures = run_cell(bootstrap, tmp_path, Store(str(checkpoints), records="kafka"))
    figures["cell_s"] = round(time.monotonic() - began)
    checkpoint = checkpoints / "orders-json"
    assert (checkpoint / "offsets").is_dir(), "Spark's own checkpoint stays at the location"
    assert not (checkpoint / "kafka-eos-sink").exists(), "the sink log is kept in Kafka, not at the checkpoint"
    assert not (checkpoint / "kafka-eos-pipeline").exists(), "so are the pipeline shape records"
    prefix = yaml.safe_load((tmp_path / "orders-store.yaml").read_text())["sink"]["transactional_id_prefix"]
    keys = [m.key().decode() for m in read_all(bootstrap, store_topic(prefix), idle_s=1.0)]
    assert any(k.endswith("/kafka-eos-sink/_meta.json") for k in keys), keys[:20]
    assert any(k.endswith("/kafka-eos-sink/_ids.json") for k in keys), keys[:20]
    assert any(k.endswith("/kafka-eos-pipeline/0.json") for k in keys), keys[:20]
    decisions = {k for k in keys if re.search(r"/kafka-eos-sink/\d+\.0\.json$", k)}
    assert len(decisions) >= figures["batches"], (decisions, figures)
    assert any("/kafka-eos-sink/_verify-runs/" in k for k in keys), "verify recorded its run in the store"
    figures["store_records"] = len(keys)
    path = str(tmp_path / "orders-store.yaml")
    status = kafka_eos(["status", path], bootstrap, tmp_path, timeout=120, env={"KAFKA_EOS_CHECKPOINTS": str(checkpoints)})
    assert status.code == 0, status.log()  # another process reads the records where the pipeline keeps them
    assert re.search(r"sink log: kafka:_kafka_eos_store-\S+/kafka-eos-sink: last decision batch \d+: committed",
                     status.stdout), status.log()
    assert "verify: newest verified batch" in status.stdout, status.log()
    for name, value in figures.items():
        record_property(name, value)
    print(f"Kafka store: {figures}")
