"""The pipeline record beside a checkpoint: what it holds, when it is written, the fallback for
checkpoints without one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_eos.connectors.pipeline.pipeline_shape import (FORMAT, PipelineShape, ShapeRecordError, _sink_parts,
                                                          record_shape, recorded_shape, records_location, shape_of,
                                                          shape_records)
from tests.connectors.pipeline.test_runner_submit_demo import write_offsets
from tests.factories import loaded
from tests.store_fakes import fake_kafka


def config(tmp_path: Path, change=lambda data: None):
    return loaded(tmp_path, change)


def records(cfg) -> list[str]:
    return sorted(p.name for p in Path(records_location(cfg.checkpoint.location)).iterdir())


def test_a_record_is_written_once_per_shape_and_never_replaced(tmp_path):
    cfg = config(tmp_path)
    assert record_shape(cfg) == shape_of(cfg)
    assert record_shape(cfg) is None, "the same shape again: nothing new"
    first = (Path(records_location(cfg.checkpoint.location)) / "0.json").read_text()
    changed = config(tmp_path, lambda d: d["transform"].update(sql="SELECT key, value FROM source"))
    assert record_shape(changed) == shape_of(changed)
    assert records(cfg) == ["0.json", "1.json"]
    assert (Path(records_location(cfg.checkpoint.location)) / "0.json").read_text() == first


def test_the_record_is_versioned_and_holds_the_shape(tmp_path):
    cfg = config(tmp_path)
    record_shape(cfg)
    data = json.loads((Path(records_location(cfg.checkpoint.location)) / "0.json").read_text())
    assert data["v"] == FORMAT and data["scans"] == 2 and data["stateful"] is False
    assert data["min_partitions"] is None and len(data["transform"]) == 16


def test_a_partition_column_is_part_of_the_sink_and_unset_keeps_the_recorded_shapes(tmp_path):
    """Checkpoints recorded before sink.partition_column existed keep their sink fingerprint."""
    plain = shape_of(config(tmp_path))
    placed = shape_of(config(tmp_path, lambda d: d["sink"].update(partition_column="p")))
    assert plain.sink != placed.sink and plain.transform == placed.transform
    assert _sink_parts(config(tmp_path))["columns"] == ["key", "value", None]


def test_the_record_holds_no_secret_not_even_hashed(tmp_path):
    def secrets(data, password):
        data["sink"]["kafka"]["properties"] = {"sasl.password": password, "security.protocol": "SASL_SSL"}
        data["sink"]["options"] = {"some.secret": password}
    one = config(tmp_path, lambda d: secrets(d, "hunter2-pw"))
    other = config(tmp_path, lambda d: secrets(d, "other-pw"))
    assert shape_of(one) == shape_of(other), "a secret does not enter any fingerprint"
    record_shape(one)
    text = (Path(records_location(one.checkpoint.location)) / "0.json").read_text()
    assert "hunter2" not in text


def test_without_a_batch_there_is_nothing_to_resume_and_looking_creates_nothing(tmp_path):
    cfg = config(tmp_path)
    assert recorded_shape(cfg.checkpoint.location) is None
    assert not Path(cfg.checkpoint.location).exists()


def test_an_older_checkpoint_falls_back_to_sources_and_state(tmp_path):
    location = Path(config(tmp_path).checkpoint.location)
    write_offsets(location, 0, 2)
    assert recorded_shape(str(location)) == PipelineShape(scans=2, stateful=False, recorded=False)
    (location / "state").mkdir()
    assert recorded_shape(str(location)) == PipelineShape(scans=2, stateful=True, recorded=False)


def test_the_newest_record_is_the_recorded_shape(tmp_path):
    cfg = config(tmp_path)
    write_offsets(Path(cfg.checkpoint.location), 0, 2)
    record_shape(config(tmp_path, lambda d: d["transform"].update(sql="SELECT key, value FROM source")))
    record_shape(cfg)
    assert recorded_shape(cfg.checkpoint.location) == shape_of(cfg)


def test_a_record_of_another_format_version_is_refused(tmp_path):
    cfg = config(tmp_path)
    write_offsets(Path(cfg.checkpoint.location), 0, 2)
    folder = Path(records_location(cfg.checkpoint.location))
    folder.mkdir(parents=True)
    (folder / "0.json").write_text(json.dumps({"v": FORMAT + 1, "scans": 2}))
    with pytest.raises(ShapeRecordError, match="format 2 is not 1"):
        recorded_shape(cfg.checkpoint.location)


@pytest.fixture
def kafka(monkeypatch):
    yield from fake_kafka(monkeypatch)


def test_with_records_in_kafka_the_shape_is_recorded_in_the_store_not_beside_the_checkpoint(tmp_path, kafka):
    cfg = config(tmp_path, lambda d: d["checkpoint"].update(records="kafka"))
    assert record_shape(cfg) == shape_of(cfg)
    assert not Path(records_location(cfg.checkpoint.location)).exists()
    [key] = kafka.live_keys()
    assert key.startswith("ck-") and key.endswith("/kafka-eos-pipeline/0.json")
    write_offsets(Path(cfg.checkpoint.location), 0, 2)
    assert recorded_shape(cfg.checkpoint.location, shape_records(cfg)) == shape_of(cfg)
    assert recorded_shape(cfg.checkpoint.location).recorded is False  # beside the checkpoint: none
