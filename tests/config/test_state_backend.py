"""The ``state`` section: loading, its rule, and the Spark settings each backend becomes."""
from __future__ import annotations

import pytest

from kafka_eos.config.state_backend import (BOUNDED_MEMORY_CONF, CHANGELOG_CONF, DEFAULT_BACKEND, MAX_MEMORY_CONF,
                                            PROVIDER_CONF, PROVIDERS, StateBackend, StateSpec, backend_of, conflicts,
                                            describe, state_conf)
from tests.factories import load, paths, problems, valid

HDFS, ROCKSDB = PROVIDERS[StateBackend.HDFS], PROVIDERS[StateBackend.ROCKSDB]


def with_state(tmp_path, state) -> dict:
    data = valid(tmp_path)
    data["state"] = state
    return data


def test_no_state_section_leaves_the_backend_to_the_checkpoint_or_the_default(tmp_path):
    cfg, found = load(tmp_path, valid(tmp_path))
    assert found == [] and cfg.state == StateSpec(backend=None, max_memory_mb=None)


@pytest.mark.parametrize("text,backend", [("rocksdb", StateBackend.ROCKSDB), ("HDFS", StateBackend.HDFS)])
def test_backend_loads_in_any_case(tmp_path, text, backend):
    cfg, found = load(tmp_path, with_state(tmp_path, {"backend": text}))
    assert found == [] and cfg.state.backend is backend


def test_a_misspelt_backend_or_key_is_reported_with_a_suggestion(tmp_path):
    _, found = load(tmp_path, with_state(tmp_path, {"backend": "rockdb", "max_memory": 100}))
    assert paths(found) == ["state.backend", "state.max_memory"]
    assert "did you mean 'rocksdb'?" in found[0].fix and "did you mean 'max_memory_mb'?" in found[1].fix


def test_max_memory_goes_with_rocksdb_only(tmp_path):
    assert "state.max_memory_mb" not in paths(problems(tmp_path, with_state(tmp_path, {"backend": "rocksdb",
                                                                                        "max_memory_mb": 512})))
    for state in ({"backend": "hdfs", "max_memory_mb": 512}, {"max_memory_mb": 512}):
        found = [v for v in problems(tmp_path, with_state(tmp_path, state)) if v.path == "state.max_memory_mb"]
        assert len(found) == 1 and "set backend: rocksdb" in found[0].fix
    assert "state.max_memory_mb" in paths(problems(tmp_path, with_state(tmp_path, {"backend": "rocksdb",
                                                                                   "max_memory_mb": 0})))


def test_hdfs_is_the_provider_alone_and_rocksdb_runs_with_changelog_checkpointing():
    assert state_conf(HDFS, StateSpec(StateBackend.HDFS)) == {PROVIDER_CONF: HDFS}
    assert state_conf(ROCKSDB, StateSpec(StateBackend.ROCKSDB)) == {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}
    assert state_conf(ROCKSDB, StateSpec(StateBackend.ROCKSDB, max_memory_mb=300)) == {
        PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true", BOUNDED_MEMORY_CONF: "true", MAX_MEMORY_CONF: "300"}
    assert state_conf("com.example.Provider", StateSpec()) == {PROVIDER_CONF: "com.example.Provider"}


def test_spark_s_own_names():
    assert PROVIDER_CONF == "spark.sql.streaming.stateStore.providerClass"
    assert CHANGELOG_CONF == "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
    assert HDFS == "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    assert ROCKSDB == "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    assert DEFAULT_BACKEND in StateBackend


def test_providers_are_named_by_backend():
    assert backend_of(ROCKSDB) is StateBackend.ROCKSDB and backend_of("com.example.Provider") is None
    assert describe(ROCKSDB) == "rocksdb (RocksDBStateStoreProvider)"
    assert describe("com.example.Provider") == "com.example.Provider"


def test_conflicts_are_the_session_s_settings_that_differ():
    wanted = {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}
    assert conflicts(wanted, {}) == [] and conflicts(wanted, {CHANGELOG_CONF: "true", "other": "x"}) == []
    assert conflicts(wanted, {PROVIDER_CONF: HDFS}) == [f"{PROVIDER_CONF}={HDFS} (the pipeline file makes it {ROCKSDB})"]
