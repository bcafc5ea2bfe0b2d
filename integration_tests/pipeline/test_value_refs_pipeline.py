"""A YAML pipeline that filters and routes without reading ``value`` and asks for it
(``source.options: {emit: valueRefs}``) keeps the value bytes out of Spark (issue 68): the source
hands each row a reference, the sink task reads the values back read_committed. Real broker, real
Spark, real ``kafka-eos run``.

- filtered on the key and routed by a topic expression: every kept id exactly once in its topic,
  with its value and headers, nothing from aborted input, across a driver killed after its decision;
- the analyzed plan decides: a transform that reads ``value``, or shuffles, is refused naming why
  (``PipelineBuildError``), and without the option it takes the values through Spark as before;
  a code query whose plan changes a reference is refused before it starts.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer

from integration_tests.kafka_tools import (ABORTED_BASE, assert_exactly_once, check_exactly_once, create_topic,
                                           produce, read_all, unique)
from integration_tests.pipeline_cli import kafka_eos, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from kafka_eos.config.loader import load_text
from kafka_eos.connectors.pipeline import builder

IDS = 3000
KEYS = 7
DROPPED = 3              # key k3 is filtered out
FIRST_TOPIC = (0, 1, 2)  # keys k0-k2 go to the first output topic, the others to the second


def _sql(first: str, second: str, where: str = f"CAST(key AS STRING) <> 'k{DROPPED}' AND offset >= 0") -> str:
    keys = ", ".join(f"'k{k}'" for k in FIRST_TOPIC)
    return (f"SELECT key, value, headers, IF(CAST(key AS STRING) IN ({keys}), '{first}', '{second}') AS topic "
            f"FROM source WHERE {where}")


def _pipeline(tmp_path: Path, source: str, sql: str, sink_options: dict | None = None, prefix: str = "refs",
              asked: bool = True) -> Path:
    cluster = {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}
    doc = {"version": 1, "name": "route", "guarantee": "exactly_once",
           "source": {"kafka": cluster, "topics": [source], "starting_offsets": "earliest",
                      "max_offsets_per_trigger": 1000, "include_headers": True,
                      "options": {"emit": "valueRefs"} if asked else {}},
           "transform": {"sql": sql},
           "sink": {"kafka": cluster, "topic_column": "topic", "headers_column": "headers",
                    "transactional_id_prefix": prefix, "options": sink_options or {},
                    "transaction_timeout_ms": 300_000},
           "checkpoint": {"location": "${KAFKA_EOS_CHECKPOINTS}/route"}}
    path = tmp_path / "route.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _config(path: Path, bootstrap: str, tmp_path: Path):
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(tmp_path)}
    cfg, problems = load_text(path.read_text(), str(path), env, path.parent)
    assert cfg is not None, problems
    return cfg


def _seed(bootstrap: str) -> str:
    topic = create_topic(bootstrap, unique("refs-in"), 3)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(IDS):
        producer.produce(topic, key=b"k%d" % (i % KEYS), value=b"%d" % i, headers=[("id", b"%d" % i)])
    producer.flush(30)
    produce(bootstrap, topic, [(b"k0", b"%d" % (ABORTED_BASE + i)) for i in range(20)],
            transactional=unique("in-abort"), commit=False)
    return topic


def test_a_filtered_routed_pipeline_reads_values_in_the_sink_exactly_once_across_a_kill(bootstrap, tmp_path):
    source = _seed(bootstrap)
    first, second = (create_topic(bootstrap, unique(f"refs-out{n}"), 2) for n in (1, 2))
    faults = tmp_path / "faults"
    faults.mkdir()
    prefix = unique("refs")  # one pipeline: the run after the kill recovers the killed run's transactions
    killed = _pipeline(tmp_path, source, _sql(first, second),
                       {"faultInjection": "after_decision@1", "faultInjectionDir": str(faults)}, prefix)
    assert builder.may_carry_value_refs(_config(killed, bootstrap, tmp_path))
    log = tmp_path / "run.log"
    proc = start_kafka_eos(["run", str(killed), "--once"], bootstrap, tmp_path, log)
    wait_for((faults, "after_decision.*"), proc, 400, log)
    kill_group(proc)
    run = kafka_eos(["run", str(_pipeline(tmp_path, source, _sql(first, second), prefix=prefix)), "--once"],
                    bootstrap, tmp_path)
    assert run.code == 0, run.log() + tail(log)
    for topic, keys in ((first, FIRST_TOPIC), (second, (4, 5, 6))):
        assert_exactly_once(check_exactly_once(bootstrap, topic, expected=[i for i in range(IDS) if i % KEYS in keys]))
        for message in read_all(bootstrap, topic):
            i = int(message.value())
            assert message.key() == b"k%d" % (i % KEYS) and message.headers() == [("id", b"%d" % i)]


def test_the_plan_decides_and_a_transform_that_reads_value_is_refused(spark, bootstrap, tmp_path):
    source = _seed(bootstrap)
    routed = _config(_pipeline(tmp_path, source, _sql("a", "b")), bootstrap, tmp_path)
    frame = builder.value_refs_frame(spark, routed)
    assert frame is not None, "project, filter on the key and metadata, route: the values stay in Kafka"
    unasked = _config(_pipeline(tmp_path, source, _sql("a", "b"), asked=False), bootstrap, tmp_path)
    assert builder.value_refs_frame(spark, unasked) is None, "not asked: the values go through Spark"
    options = builder.writer_options(routed, once=True, value_refs=True)
    assert options["source.emit"] == "valueRefs" and options["source.subscribe"] == source
    reads_value = [_sql("a", "b", where="length(value) > 1"),
                   "SELECT key, concat(value, X'00') AS value, headers, 'a' AS topic FROM source",
                   "SELECT key, value, headers, 'a' AS topic FROM source DISTRIBUTE BY key",
                   "SELECT key, value, headers, CAST(value AS STRING) AS topic FROM source"]
    for sql in reads_value:
        cfg = _config(_pipeline(tmp_path, source, sql), bootstrap, tmp_path)
        with pytest.raises(builder.PipelineBuildError, match="source.options.emit: valueRefs: .*fix: remove emit"):
            builder.value_refs_frame(spark, cfg)
    from kafka_eos.connectors.plan_check import value_refs_refusal
    for sql, reason in zip(reads_value, ("the filter", "concat(", "RepartitionByExpression", "reads value"), strict=True):
        refs = builder.build_frame(spark, _config(_pipeline(tmp_path, source, sql), bootstrap, tmp_path),
                                   value_refs=True)
        assert reason in (value_refs_refusal(refs) or ""), (sql, value_refs_refusal(refs))


def test_a_code_query_that_changes_a_value_reference_is_refused(spark, bootstrap):
    from kafka_eos import connectors
    from kafka_eos.connectors.source.value_refs import ValueRefError
    connectors.register(spark)
    rows = (spark.readStream.format("kafka-eos").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", unique("in")).option("emit", "valueRefs").load())
    connectors.check_deterministic(rows.selectExpr("key", "value").where("partition > 0"))
    for changed in (rows.selectExpr("key", "concat(value, X'00') AS value"), rows.where("length(value) > 3"),
                    rows.selectExpr("key", "value", "value AS copy")):
        with pytest.raises(ValueRefError, match="value references"):
            connectors.check_deterministic(changed, allow_nondeterministic=True)
