"""``sink.partition_column`` on the real broker and Spark, in the session's SparkSession (issue 66,
item 4): each row goes to the partition its column names, exactly once (a null row to the
partitioner's choice), the DLQ's rows beside them to the partitioner's; `verify` passes over the
run. A partition the topic does not have fails the batch naming the topic and partition, and
nothing of that batch is committed."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from integration_tests.kafka_tools import check_exactly_once, create_topic, produce, read_all, unique
from integration_tests.pipeline_cli import kafka_eos
from kafka_eos.config.loader import load_text
from kafka_eos.connectors.pipeline.runner import PipelineFailed, run_query

SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
ORDERS, SHARDS = 600, 3
# every 7th order has no shard (null): the partitioner places it
SQL = ("SELECT CAST(value.id AS STRING) AS key, to_json(value) AS value, "
       "CASE WHEN value.id % 7 = 0 THEN NULL ELSE value.id % {shards} END AS shard FROM source")


def pipeline(tmp_path: Path, bootstrap: str, topics: dict[str, str], shards: int = SHARDS) -> tuple[Path, object]:
    doc = {"version": 1, "name": "sharded",
           "source": {"kafka": {"bootstrap_servers": bootstrap}, "topics": [topics["in"]],
                      "starting_offsets": "earliest", "format": "json", "schema": {"inline": SCHEMA}},
           "transform": {"sql": SQL.format(shards=shards)},
           "sink": {"kafka": {"bootstrap_servers": bootstrap}, "topic": topics["out"], "format": "string",
                    "partition_column": "shard", "transactional_id_prefix": unique("sharded")},
           "errors": {"on_decode_error": "dlq", "dlq_topic": topics["dlq"]},
           "checkpoint": {"location": str(tmp_path / "cp")}}
    path = tmp_path / "sharded.yaml"
    path.write_text(yaml.safe_dump(doc))
    cfg, problems = load_text(path.read_text(), str(path))
    assert cfg is not None and not problems, problems
    return path, cfg


def seed(bootstrap: str, topic: str) -> None:
    records = [(None, json.dumps({"id": i}).encode()) for i in range(ORDERS)]
    records[5] = (None, b"not json")  # a poison record: to the DLQ, not the output
    produce(bootstrap, topic, records, transactional=unique("sharded-in"))


def test_each_row_goes_to_the_partition_its_column_names_exactly_once(spark, bootstrap, tmp_path):
    topics = {"in": create_topic(bootstrap, unique("orders"), 2), "out": create_topic(bootstrap, unique("sharded"), 4),
              "dlq": create_topic(bootstrap, unique("sharded-dlq"), 2)}
    seed(bootstrap, topics["in"])
    path, cfg = pipeline(tmp_path, bootstrap, topics)
    run_query(spark, cfg, once=True, emit=lambda line: None)

    ids = [i for i in range(ORDERS) if i != 5]
    report = check_exactly_once(bootstrap, topics["out"], expected=ids, id_of=lambda m: json.loads(m.value())["id"])
    assert report.ok, report.line()
    placed = Counter()
    for message in read_all(bootstrap, topics["out"]):
        i = json.loads(message.value())["id"]
        if i % 7:
            assert message.partition() == i % SHARDS, (i, message.partition())
        else:
            placed[message.partition()] += 1
    assert sum(placed.values()) == len([i for i in ids if i % 7 == 0])
    assert [m.value() for m in read_all(bootstrap, topics["dlq"])] == [b"not json"]
    verified = kafka_eos(["verify", str(path), "--json"], bootstrap, tmp_path, timeout=120)
    assert verified.code == 0, verified.log()


def test_a_partition_the_topic_does_not_have_fails_the_batch_and_commits_nothing(spark, bootstrap, tmp_path):
    topics = {"in": create_topic(bootstrap, unique("orders"), 1), "out": create_topic(bootstrap, unique("sharded"), 2),
              "dlq": create_topic(bootstrap, unique("sharded-dlq"), 1)}
    seed(bootstrap, topics["in"])
    _, cfg = pipeline(tmp_path, bootstrap, topics, shards=5)  # shards 2, 3, 4: not partitions of the topic
    with pytest.raises(PipelineFailed) as failed:
        run_query(spark, cfg, once=True, emit=lambda line: None)
    told = str(failed.value)
    assert topics["out"] in told and "partition" in told.lower(), told
    assert read_all(bootstrap, topics["out"]) == [], "nothing of the failed batch is committed"
    assert read_all(bootstrap, topics["dlq"]) == []
