"""A restore the savepoint cannot carry (a stream-stream join, state without a watermark): ``validate
--against-savepoint`` and ``run --from-savepoint`` say the reason and a way on that exists once the
old checkpoint is saved (a start of it is refused: "keep the checkpoint unchanged" is no way on
then), claim nothing carries over, and write nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_eos.config.redact import install
from kafka_eos.connectors.cli_savepoint import restore_before_run
from kafka_eos.connectors.pipeline import savepoint
from kafka_eos.connectors.pipeline.savepoint import take
from kafka_eos.connectors.pipeline.savepoint_check import against
from tests.connectors.pipeline.test_savepoint_plan import WATERMARK, config, stopped_pipeline
from tests.factories import loaded

JOIN = ("SELECT CAST(a.value.id AS STRING) AS key, CAST(b.value.id AS STRING) AS value FROM source a JOIN source b "
        "ON a.value.id = b.value.id AND b.event_time BETWEEN a.event_time AND a.event_time + INTERVAL 2 SECONDS")
DISTINCT = "SELECT DISTINCT key, value FROM source"


def new_config(tmp_path: Path, sql: str, watermark: bool):
    def change(data: dict) -> None:
        data["transform"] = {"sql": sql, **({"watermark": WATERMARK} if watermark else {})}
        data["errors"] = {"on_decode_error": "fail"}
        data["checkpoint"]["location"] = str(tmp_path / "ckpt2")
        data["sink"].pop("transactional_id_prefix")
    return loaded(tmp_path, change)


@pytest.fixture
def saved(tmp_path, monkeypatch):
    monkeypatch.setattr(savepoint, "QUIET_S", 0.0)
    return take(stopped_pipeline(tmp_path), None, "4.3.0", print)


CASES = {"join": (JOIN, True, "stream_join", "emits matches as they are found"),
         "distinct": (DISTINCT, False, "no_watermark", "never closes"),
         "group_by": (None, False, "no_watermark", "never closes")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_refuses_with_the_reason_and_a_way_on_past_the_saved_checkpoint(tmp_path, saved, case):
    sql, watermark, kind, reason = CASES[case]
    cfg = config(tmp_path, watermark=False, checkpoint="ckpt2", prefix=None) if sql is None else new_config(
        tmp_path, sql, watermark)
    code, text = against(cfg, saved.location, offline=True)
    assert code == 1, text
    assert f"refused: a savepoint cannot carry this pipeline's state ({kind}): " in text and reason in text, text
    assert "carries over" not in text and "check:" not in text, f"a refused restore claims what carries over: {text}"
    assert "Keep the checkpoint unchanged" not in text, "the saved checkpoint cannot be started again"
    assert "--from-savepoint" in text and "source.starting_offsets" in text, text
    ends = json.dumps({"in": {"0": 40}})
    assert ends in text, f"the way on names where the saved pipeline stopped: {text}"
    assert text.count("refused:") == 1, text


@pytest.mark.parametrize("case", ["join", "distinct"])
def test_run_from_savepoint_refuses_the_same_way_and_writes_nothing(tmp_path, saved, case, capsys):
    sql, watermark, kind, reason = CASES[case]
    cfg = new_config(tmp_path, sql, watermark)
    assert restore_before_run(cfg, saved.location, 1.0, install(())) == 1
    err = capsys.readouterr().err
    assert "nothing was started" in err and f"({kind}): " in err and reason in err, err
    assert "Keep the checkpoint unchanged" not in err and "source.starting_offsets" in err, err
    _, text = against(cfg, saved.location, offline=True)
    refused = next(line for line in text.splitlines() if "refused:" in line).split("refused: ", 1)[1]
    assert refused in err, "validate and run say the same"
    assert not (tmp_path / "ckpt2").exists(), "the refused restore wrote something"


KAFKA_SAVEPOINT = "kafka:_kafka_eos_store-old-eos/ck-0123456789abcdef/kafka-eos-sink/_savepoint"


@pytest.fixture
def unreadable_kafka_store(monkeypatch):
    """Reading a savepoint resolves its store's cluster as opening it does (``stores._cluster``),
    then fails as an unreachable broker would: no broker in a unit test."""
    from kafka_eos.connectors.pipeline import restore, savepoint_check
    from kafka_eos.txn.log import stores
    from kafka_eos.txn.log.savepoints import SavepointUnreadable

    def read(location: str):
        settings = stores._cluster(stores.parse_kafka(location)).settings
        raise SavepointUnreadable(f"{location}: unreachable at {settings['bootstrap.servers']}")
    monkeypatch.setattr(savepoint_check, "read_savepoint", read)
    monkeypatch.setattr(restore, "read_savepoint", read)
    stores.forget_clusters()
    yield
    stores.forget_clusters()


def test_a_savepoint_in_a_kafka_record_store_is_read_through_the_new_pipeline_s_output_cluster(
        tmp_path, unreadable_kafka_store, capsys):
    """Under checkpoint.records: kafka the savepoint is in the saved prefix's store topic, which no
    pipeline of this process registered: validate and run read it through the new file's sink cluster."""
    cfg = new_config(tmp_path, DISTINCT, False)
    code, text = against(cfg, KAFKA_SAVEPOINT, offline=True)
    assert code == 1 and "unreachable at localhost:9092" in text and "no Kafka cluster is known" not in text, text
    assert restore_before_run(cfg, KAFKA_SAVEPOINT, 1.0, install(())) == 1
    err = capsys.readouterr().err
    assert "unreachable at localhost:9092" in err and "no Kafka cluster is known" not in err, err
