"""A plan a replay may not reproduce is refused before the query starts (real Spark, real broker).

- the YAML pipeline builder walks Spark's analyzed plan: rand() in the transform is refused naming
  the expression; ``kafka-eos run`` refuses it before starting anything (validate's rule), and runs
  exactly once with ``transform.allow_nondeterministic: true``;
- the code path (``kafka_eos.connectors.check_deterministic``): round-robin ``repartition(4)``
  refused with ``sortBeforeRepartition=false``, coalesce after a shuffle and a Python UDF marked
  non-deterministic refused, a stream-static join warned;
- current_timestamp() is replay-safe: the replay of a batch sees the batch timestamp of its
  first run, the ``batchTimestampMs`` recorded in the checkpoint's ``offsets/<batch>``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pyspark.sql.functions import current_timestamp, udf

from kafka_eos import connectors
from kafka_eos.config.loader import load_text
from kafka_eos.connectors.pipeline import builder
from kafka_eos.connectors.plan_check import NonDeterministicPlanError, check_deterministic
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, create_topic, produce, unique
from integration_tests.pipeline_cli import kafka_eos

IDS = 300


def _seed(bootstrap: str, partitions: int = 2) -> str:
    topic = create_topic(bootstrap, unique("det-in"), partitions)
    produce(bootstrap, topic, [(str(i).encode(), str(i).encode()) for i in range(IDS)])
    return topic


def _pipeline(tmp_path: Path, bootstrap: str, source: str, sink: str, sql: str, allow: bool = False) -> Path:
    cluster = {"bootstrap_servers": bootstrap}
    doc = {"version": 1, "name": "det", "guarantee": "exactly_once",
           "source": {"kafka": cluster, "topics": [source], "starting_offsets": "earliest", "format": "string"},
           "transform": {"sql": sql, **({"allow_nondeterministic": True} if allow else {})},
           "sink": {"kafka": cluster, "topic": sink, "format": "string", "transactional_id_prefix": unique("det"),
                    "transaction_timeout_ms": 300000},
           "checkpoint": {"location": str(tmp_path / "ckpt"), "trigger": "1 second"}}
    path = tmp_path / "det.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _config(path: Path):
    cfg, problems = load_text(path.read_text(), str(path), {}, path.parent)
    assert cfg is not None, problems
    return cfg


def _stream(spark, bootstrap: str, topic: str):
    connectors.register(spark)
    return (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())


def test_yaml_builder_refuses_rand_naming_it_and_passes_a_plain_transform(spark, bootstrap, tmp_path):
    source = _seed(bootstrap)
    rand_sql = "SELECT key, value FROM source WHERE rand() < 0.5"
    with pytest.raises(builder.PipelineBuildError) as refused:
        builder.start(spark, _config(_pipeline(tmp_path, bootstrap, source, "unused", rand_sql)))
    text = str(refused.value)
    assert text.startswith("transform: ") and "rand(" in text and "allow_nondeterministic: true" in text, text
    assert not spark.streams.active, "nothing was started"
    plain = _config(_pipeline(tmp_path, bootstrap, source, "unused", "SELECT key, value FROM source"))
    builder.check_replayable(builder.build_frame(spark, plain), plain)   # decode/encode add nothing refused


@pytest.mark.chaos  # `make chaos`: make test keeps the builder's refusal (no run)
def test_run_refuses_rand_then_runs_exactly_once_with_the_opt_out(bootstrap, tmp_path):
    source, sink = _seed(bootstrap), create_topic(bootstrap, unique("det-out"), 2)
    sql = "SELECT key, concat('out-', value) AS value, rand() AS sample FROM source"
    refused = kafka_eos(["run", str(_pipeline(tmp_path, bootstrap, source, sink, sql)), "--once"], bootstrap, tmp_path)
    assert refused.code == 1 and "nothing was started" in refused.stderr, refused.log()
    assert "transform.sql: rand() is non-deterministic" in refused.stderr, refused.log()

    allowed = _pipeline(tmp_path, bootstrap, source, sink, sql, allow=True)
    run = kafka_eos(["run", str(allowed), "--once"], bootstrap, tmp_path)
    assert run.code == 0, run.log()
    assert_exactly_once(check_exactly_once(bootstrap, sink, IDS))


def test_code_path_refusals_and_warnings(spark, bootstrap):
    df = _stream(spark, bootstrap, _seed(bootstrap))
    key = "spark.sql.execution.sortBeforeRepartition"
    spark.conf.set(key, "false")
    try:
        with pytest.raises(NonDeterministicPlanError, match=r"repartition\(4\).*repartition\(4, <key columns>\)"):
            connectors.check_deterministic(df.repartition(4))
    finally:
        spark.conf.unset(key)
    assert connectors.check_deterministic(df.repartition(4)) == []   # sorted before the round robin

    with pytest.raises(NonDeterministicPlanError, match=r"coalesce\(2\)"):
        connectors.check_deterministic(df.repartition(3, "key").coalesce(2))
    assert connectors.check_deterministic(df.coalesce(1)) == []      # no shuffle below: fixed grouping

    noisy = udf(lambda v: v, "binary").asNondeterministic()
    with pytest.raises(NonDeterministicPlanError, match="asNondeterministic"):
        connectors.check_deterministic(df.select(noisy("value").alias("value")))

    assert connectors.check_deterministic(df.select("key", current_timestamp().alias("at"))) == []
    warned: list[str] = []
    static = df.sparkSession.range(10).selectExpr("CAST(id AS STRING) AS k")
    joined = df.selectExpr("CAST(key AS STRING) AS k", "value").join(static, "k")
    found = check_deterministic(joined, warn=warned.append)
    assert [f.severity for f in found] == ["warn"] and "stream-static join" in warned[0], warned

    found = connectors.check_deterministic(df.selectExpr("key", "value", "uuid() AS id"), allow_nondeterministic=True)
    assert [f.what for f in found] == ["uuid()"]


def test_current_timestamp_replay_uses_the_recorded_batch_time(spark, bootstrap, tmp_path):
    df = _stream(spark, bootstrap, _seed(bootstrap, partitions=1)).select(current_timestamp().alias("at"))
    seen: list[tuple[int, object]] = []
    checkpoint = tmp_path / "ckpt"

    def run_once() -> None:
        query = (df.writeStream.foreachBatch(lambda batch, batch_id: seen.append((batch_id, batch.first()["at"])))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None

    run_once()
    for name in ("0", ".0.crc"):              # as if the driver died before Spark's commit of batch 0
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    run_once()                                # Spark replays batch 0 from offsets/0
    assert [b for b, _ in seen] == [0, 0], seen
    recorded = json.loads((checkpoint / "offsets" / "0").read_text().splitlines()[1])["batchTimestampMs"]
    first, replay = seen[0][1], seen[1][1]
    assert first == replay and int(first.timestamp() * 1000) == recorded, (first, replay, recorded)
