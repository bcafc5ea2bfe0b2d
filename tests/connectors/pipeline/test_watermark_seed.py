"""The first watermark of a sliding-window restore without Spark: which restores are seeded, the
seed's lines (an empty batch 0 per scan, in the builder's order), its metadata (Spark's own, nulls
filled from the session), and when the replay query is still due on a seeded checkpoint."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.pipeline import restore, watermark_seed
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.offsets import model
from kafka_eos.offsets.rewind import SavepointRefused
from kafka_eos.txn.log.savepoints import RestoreStart, write_restore
from tests.factories import loaded

MINUTE = 60_000
W = 3 * MINUTE + 30_000
REWIND, END = {("in", 0): 10, ("in", 1): 4}, {("in", 0): 40, ("in", 1): 9}


def config(tmp_path: Path, window: str = "window(event_time, '1 minute', '30 seconds')", late: bool = True,
           dlq: bool = True):
    def change(data: dict) -> None:
        watermark = {"column": "event_time", "expression": "timestamp_millis(value.id)", "delay": "30 seconds"}
        if late:
            watermark["late_topic"] = "late"
        data["transform"] = {"sql": f"SELECT CAST(COUNT(*) AS STRING) AS key, CAST(COUNT(*) AS STRING) AS value "
                                    f"FROM source GROUP BY {window}", "watermark": watermark}
        data["errors"] = {"on_decode_error": "dlq", "dlq_topic": "in-dlq"} if dlq else {"on_decode_error": "fail"}
        data["sink"].pop("transactional_id_prefix")
    return loaded(tmp_path, change)


def start() -> RestoreStart:
    return RestoreStart("/saved", 3 * MINUTE, W, dict(END), dict(REWIND), 2)


def write_entry(ck: Path, batch: int, watermark_ms: int, lines: list[str]) -> None:
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "offsets" / str(batch)).write_text(
        f'v1\n{{"batchWatermarkMs":{watermark_ms},"batchTimestampMs":1,"conf":{{}}}}\n' + "\n".join(lines))


@pytest.mark.parametrize("window, seeded", [("window(event_time, '1 minute', '30 seconds')", True),
                                            ("window(event_time, '1 minute')", False),
                                            ("window(event_time, '1 minute', '1 minute')", False),
                                            ("window(event_time, '30 seconds', '1 minute')", False)])
def test_only_windows_that_overlap_are_seeded(tmp_path, window, seeded):
    assert watermark_seed.needed(config(tmp_path, window)) is seeded


@pytest.mark.parametrize("late, dlq, names", [(True, True, ("output", "dlq", "late")), (True, False, ("output", "late")),
                                               (False, True, ("output", "dlq")), (False, False, (None,))])
def test_the_seed_is_an_empty_batch_under_w_one_line_per_scan_in_the_builders_order(tmp_path, late, dlq, names):
    seed = watermark_seed.plan_seed(config(tmp_path, late=late, dlq=dlq), start())
    assert seed.watermark_ms == W
    lines = [json.loads(line) for line in seed.lines]
    assert [model.scan_of(line) for line in lines] == list(names)
    for line in lines:  # ends where it starts: batch 0 reads nothing; the replay is batch 1
        assert model.decode(line) == REWIND and model.planned_start(line) == REWIND and not model.is_initial(line)


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default=None):
        return self.values.get(key, default)


class FakeSpark:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = FakeConf(values)


def test_the_metadata_is_sparks_own_with_the_settings_it_leaves_null_taken_from_the_session(monkeypatch):
    spark_json = {"batchWatermarkMs": W, "batchTimestampMs": 7, "conf": {
        "spark.sql.shuffle.partitions": None, "spark.sql.streaming.multipleWatermarkPolicy": "min",
        "spark.sql.streaming.unknown": None}}
    seen = []
    monkeypatch.setattr(spark_compat, "offset_seq_metadata_json",
                        lambda spark, w, ts: seen.append((w, ts)) or json.loads(json.dumps(spark_json)))
    line = watermark_seed.metadata_line(FakeSpark({"spark.sql.shuffle.partitions": "4"}),
                                        watermark_seed.Seed(W, ("x",)), now_ms=7)
    assert seen == [(W, 7)]
    assert json.loads(line) == {"batchWatermarkMs": W, "batchTimestampMs": 7, "conf": {
        "spark.sql.shuffle.partitions": "4", "spark.sql.streaming.multipleWatermarkPolicy": "min"}}


def test_a_session_writing_the_v2_offset_log_is_refused_before_anything_is_written(tmp_path):
    spark = FakeSpark({spark_compat.OFFSET_LOG_FORMAT_CONF: "2"})
    with pytest.raises(SavepointRefused, match="offsetLog.formatVersion is 2"):
        watermark_seed.write(spark, config(tmp_path), start())
    assert not (tmp_path / "ckpt").exists()


def test_the_replay_is_due_until_a_batch_after_the_seed_is_planned(tmp_path):
    cfg = config(tmp_path)
    ck = tmp_path / "ckpt"
    write_restore(str(ck), start())
    assert restore.needs_replay(cfg) == start()  # nothing planned yet
    seed = watermark_seed.plan_seed(cfg, start())
    write_entry(ck, 0, W, list(seed.lines))
    assert watermark_seed.seed_only(cfg, start(), CheckpointReader(str(ck)))
    assert restore.needs_replay(cfg) == start(), "a driver that died after the seed: the replay query runs"
    replay = json.dumps(model.with_scan(model.encode(END), "output"))
    write_entry(ck, 1, W, [replay] * 3)
    assert restore.needs_replay(cfg) is None, "batch 1 planned: Spark's own recovery replays it"


@pytest.mark.parametrize("watermark, lines", [(0, None), (W, [json.dumps(model.encode(END, start=REWIND))] * 3)])
def test_a_batch_0_that_is_not_the_seed_is_the_replay_itself(tmp_path, watermark, lines):
    cfg = config(tmp_path)
    ck = tmp_path / "ckpt"
    write_restore(str(ck), start())
    write_entry(ck, 0, watermark, lines or list(watermark_seed.plan_seed(cfg, start()).lines))
    assert not watermark_seed.is_seed(cfg, start(), CheckpointReader(str(ck)))
    assert restore.needs_replay(cfg) is None


def test_a_tumbling_restore_is_never_taken_for_seeded(tmp_path):
    cfg = config(tmp_path, "window(event_time, '1 minute')")
    ck = tmp_path / "ckpt"
    write_restore(str(ck), start())
    write_entry(ck, 0, W, list(watermark_seed.plan_seed(cfg, start()).lines))
    assert restore.needs_replay(cfg) is None
