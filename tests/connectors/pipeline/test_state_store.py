"""The state store a query starts with (``state_store.settings``, pure), read from a checkpoint
(``for_start``), set for the query alone (``applied``); the checkpoint comparison of a backend
change (``checkpoint_compat``) and its ``validate --against-checkpoint`` report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_eos.config.state_backend import CHANGELOG_CONF, DEFAULT_BACKEND, PROVIDER_CONF, PROVIDERS, StateBackend
from kafka_eos.connectors import exit_codes
from kafka_eos.connectors.cli import main
from kafka_eos.connectors.pipeline.checkpoint_compat import Checkpoint, compare, recorded_provider
from kafka_eos.connectors.pipeline.pipeline_shape import record_shape, shape_of
from kafka_eos.connectors.pipeline.state_store import (StateBackendChanged, StateConfConflict, applied, for_start,
                                                       settings)
from tests.factories import loaded, valid, write

HDFS, ROCKSDB = PROVIDERS[StateBackend.HDFS], PROVIDERS[StateBackend.ROCKSDB]
WINDOWED = {"sql": "SELECT CAST(value.id AS STRING) AS key, CAST(count(*) AS STRING) AS value FROM source "
                   "GROUP BY window(ts, '1 minute'), value.id",
            "watermark": {"column": "ts", "expression": "timestamp", "delay": "1 minute"}}


def pipeline(tmp_path: Path, backend: str | None = None, windowed: bool = True, **state):
    def change(data: dict) -> None:
        data["errors"] = {"on_decode_error": "skip"}
        if windowed:
            data["transform"] = dict(WINDOWED)
        if backend or state:
            data["state"] = {**({"backend": backend} if backend else {}), **state}
    return loaded(tmp_path, change)


def test_a_new_checkpoint_gets_the_file_s_backend_or_the_default(tmp_path):
    assert settings(pipeline(tmp_path, "rocksdb"), {}, None) == {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}
    assert settings(pipeline(tmp_path, "hdfs"), {}, None) == {PROVIDER_CONF: HDFS}
    assert settings(pipeline(tmp_path), {}, None)[PROVIDER_CONF] == PROVIDERS[DEFAULT_BACKEND]


def test_an_existing_checkpoint_keeps_what_it_recorded_when_the_file_says_nothing(tmp_path):
    assert settings(pipeline(tmp_path), {}, ROCKSDB) == {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}
    assert settings(pipeline(tmp_path), {}, HDFS) == {PROVIDER_CONF: HDFS}
    assert settings(pipeline(tmp_path, "rocksdb"), {}, ROCKSDB) == {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}


def test_a_backend_change_on_a_stateful_checkpoint_is_refused_naming_both_and_the_savepoint(tmp_path):
    with pytest.raises(StateBackendChanged) as refused:
        settings(pipeline(tmp_path, "rocksdb"), {}, HDFS)
    text = str(refused.value)
    assert "state.backend: rocksdb (RocksDBStateStoreProvider)" in text
    assert "was started with hdfs (HDFSBackedStateStoreProvider)" in text
    assert "Nothing was started" in text and "keep state.backend: hdfs for this checkpoint" in text
    assert "needs a savepoint" in text and "not yet available" in text
    assert exit_codes.of_error(refused.value) == exit_codes.NEEDS_OPERATOR.code


def test_a_session_provider_is_honoured_when_the_file_says_nothing_and_refused_against_the_checkpoint(tmp_path):
    assert settings(pipeline(tmp_path), {PROVIDER_CONF: ROCKSDB}, None) == {CHANGELOG_CONF: "true"}
    with pytest.raises(StateBackendChanged, match=f"--conf {PROVIDER_CONF}: rocksdb"):
        settings(pipeline(tmp_path), {PROVIDER_CONF: ROCKSDB}, HDFS)


def test_a_stateless_pipeline_may_name_another_backend_it_has_no_state(tmp_path):
    assert settings(pipeline(tmp_path, "rocksdb", windowed=False), {}, HDFS) == {PROVIDER_CONF: HDFS}


def test_a_session_setting_contradicting_the_file_is_refused_not_overridden(tmp_path):
    with pytest.raises(StateConfConflict) as refused:
        settings(pipeline(tmp_path, "rocksdb"), {PROVIDER_CONF: HDFS}, None)
    assert f"the Spark session sets {PROVIDER_CONF}={HDFS} (the pipeline file makes it {ROCKSDB})" in str(refused.value)
    assert exit_codes.of_error(refused.value) == exit_codes.INVALID.code
    with pytest.raises(StateConfConflict, match="changelogCheckpointing.enabled=false"):
        settings(pipeline(tmp_path, "rocksdb"), {CHANGELOG_CONF: "false"}, None)
    assert settings(pipeline(tmp_path, "rocksdb"), {PROVIDER_CONF: ROCKSDB}, None) == {CHANGELOG_CONF: "true"}


def write_offsets(location: Path, provider: str | None, batch: int = 0) -> None:
    (location / "offsets").mkdir(parents=True, exist_ok=True)
    conf = {"spark.sql.shuffle.partitions": "2", **({PROVIDER_CONF: provider} if provider else {})}
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": conf})
    (location / "offsets" / str(batch)).write_text(f'v1\n{meta}\n{{"v": 1, "topics": {{"in": {{"0": 5}}}}}}')


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values, self.calls = dict(values), []

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        self.calls.append(("set", key, value))
        self.values[key] = value

    def unset(self, key):
        self.calls.append(("unset", key))
        self.values.pop(key, None)


class FakeSpark:
    def __init__(self, values: dict[str, str] | None = None) -> None:
        self.conf = FakeConf(values or {})


def test_for_start_reads_the_newest_offset_log_entry_and_the_session(tmp_path):
    cfg = pipeline(tmp_path, "rocksdb")
    location = Path(cfg.checkpoint.location)
    assert recorded_provider(str(location)) is None
    assert for_start(FakeSpark(), cfg) == {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}
    write_offsets(location, HDFS)
    assert recorded_provider(str(location)) == HDFS
    with pytest.raises(StateBackendChanged):
        for_start(FakeSpark(), cfg)
    write_offsets(location, ROCKSDB, batch=1)
    assert for_start(FakeSpark({PROVIDER_CONF: ROCKSDB}), cfg) == {CHANGELOG_CONF: "true"}


def test_applied_sets_the_settings_for_the_block_and_puts_the_session_s_back():
    spark = FakeSpark({PROVIDER_CONF: HDFS})
    with applied(spark, {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}):
        assert spark.conf.values == {PROVIDER_CONF: ROCKSDB, CHANGELOG_CONF: "true"}
    assert spark.conf.values == {PROVIDER_CONF: HDFS}
    with pytest.raises(RuntimeError), applied(spark, {CHANGELOG_CONF: "true"}):
        raise RuntimeError("start failed")
    assert spark.conf.values == {PROVIDER_CONF: HDFS}


def test_compare_names_a_backend_change_of_a_stateful_pipeline(tmp_path):
    old = pipeline(tmp_path)
    found = Checkpoint(old.checkpoint.location, shape_of(old), None, old.sink.transactional_id_prefix, HDFS)
    [verdict] = compare(found, pipeline(tmp_path, "rocksdb"))
    assert not verdict.keeps and "was started with hdfs" in verdict.line() and "needs a savepoint" in verdict.line()
    assert compare(found, pipeline(tmp_path, "hdfs")) == [] and compare(found, pipeline(tmp_path)) == []
    stateless = pipeline(tmp_path, windowed=False)
    found = Checkpoint(old.checkpoint.location, shape_of(stateless), None, old.sink.transactional_id_prefix, HDFS)
    [verdict] = compare(found, pipeline(tmp_path, "rocksdb", windowed=False))
    assert verdict.keeps and "keeps no state" in verdict.line()


def test_validate_against_checkpoint_refuses_a_backend_change(tmp_path, capsys):
    cfg = pipeline(tmp_path)
    write_offsets(Path(cfg.checkpoint.location), HDFS)
    record_shape(cfg)
    data = valid(tmp_path)
    data.update(transform=dict(WINDOWED), errors={"on_decode_error": "skip"}, state={"backend": "rocksdb"})
    assert main(["validate", "--offline", "--against-checkpoint", str(write(tmp_path, "p.yaml", data))]) == 1
    err = capsys.readouterr().err
    assert "state.backend: rocksdb (RocksDBStateStoreProvider), but checkpoint" in err
    assert "needs a savepoint (or a new checkpoint)" in err and "not yet available" in err
    data["state"] = {"backend": "hdfs"}
    assert main(["validate", "--offline", "--against-checkpoint", str(write(tmp_path, "p.yaml", data))]) == 0


def test_describe_shows_the_file_s_state_section_and_the_checkpoint_s_state_store(tmp_path, capsys):
    data = valid(tmp_path)
    data["state"] = {"backend": "rocksdb", "max_memory_mb": 256}
    checkpoint = Path(data["checkpoint"]["location"])
    write_offsets(checkpoint, HDFS)
    (checkpoint / "commits").mkdir()
    (checkpoint / "commits" / "0").write_text("v1\n{}")
    assert main(["describe", "--offline", "--json", str(write(tmp_path, "p.yaml", data))]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["state"] == {"backend": "rocksdb", "max_memory_mb": 256}
    assert plan["checkpoint_state"]["state_store"] == "hdfs (HDFSBackedStateStoreProvider)"
