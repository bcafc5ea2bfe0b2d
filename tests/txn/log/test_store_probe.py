"""The store probe (txn/store_probe): what validate and the start ask of the sink log's location."""
from __future__ import annotations

import os

import pytest

from kafka_eos.txn.log import store_probe
from kafka_eos.txn.log.log_store import LogStore
from kafka_eos.txn.log.store_probe import StoreUnusable, probe_store


def test_a_writable_location_passes_and_keeps_nothing(tmp_path):
    probe = probe_store(str(tmp_path / "sink"))
    assert probe.create_mode.startswith("exclusive") and probe.exclusive
    assert probe.round_trip_ms > 0
    assert os.listdir(tmp_path / "sink") == []


def test_a_location_that_cannot_be_created_names_the_step(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreUnusable) as caught:
        probe_store(str(blocker / "sink"))
    assert caught.value.step == "creating the location"
    assert str(blocker / "sink") in str(caught.value)


def test_a_store_that_replaces_records_is_refused_and_the_probe_removed(tmp_path, monkeypatch):
    real = LogStore.create_bytes
    calls = []

    def replacing(self, name, data):  # a store whose "create" silently overwrites
        calls.append(name)
        if len(calls) > 1:
            (self._root / name).write_bytes(data)
            return
        real(self, name, data)
    monkeypatch.setattr(store_probe.LogStore, "create_bytes", replacing)
    with pytest.raises(StoreUnusable, match="replaced it instead of refusing"):
        probe_store(str(tmp_path))
    assert os.listdir(tmp_path) == []
