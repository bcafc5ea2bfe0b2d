"""Validation rules: each one on its own, then a file with many mistakes reported at once."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafka_eos.config import rules_safety
from kafka_eos.config.loader import load_text
from kafka_eos.config.rules import Context, check
from kafka_eos.config.rules_safety import across_pipelines
from kafka_eos.txn.log.sink_log import location_for
from tests.factories import load, paths, problems, valid


def mutate(tmp_path, change):
    data = valid(tmp_path)
    change(data)
    return problems(tmp_path, data)


CASES = {
    "isolation read_uncommitted": (
        lambda d: d["source"]["kafka"].update(properties={"isolation.level": "read_uncommitted"}),
        'source.kafka.properties["isolation.level"]', "read_uncommitted"),
    "acks=1": (lambda d: d["sink"]["kafka"].update(properties={"acks": "1"}), 'sink.kafka.properties["acks"]', "acks=1"),
    "idempotence off": (lambda d: d["sink"]["kafka"].update(properties={"enable.idempotence": False}),
                        'sink.kafka.properties["enable.idempotence"]', "non-idempotent"),
    "own transactional.id": (lambda d: d["sink"]["kafka"].update(properties={"transactional.id": "x"}),
                             'sink.kafka.properties["transactional.id"]', "must not be set"),
    "own transaction.timeout.ms": (lambda d: d["sink"]["kafka"].update(properties={"transaction.timeout.ms": "5"}),
                                   'sink.kafka.properties["transaction.timeout.ms"]', "must not be set"),
    "isolation on the sink": (lambda d: d["sink"]["kafka"].update(properties={"isolation.level": "read_committed"}),
                              'sink.kafka.properties["isolation.level"]', "set it on the source"),
    "request.required.acks=0": (lambda d: d["sink"]["kafka"].update(properties={"request.required.acks": "0"}),
                                'sink.kafka.properties["request.required.acks"]', "request.required.acks=0"),
    "prefix missing": (lambda d: (d["sink"].pop("transactional_id_prefix"), d["checkpoint"].pop("location")),
                       "sink.transactional_id_prefix", "missing"),
    "prefix invalid": (lambda d: d["sink"].update(transactional_id_prefix="has space"),
                       "sink.transactional_id_prefix", "invalid"),
    "checkpoint missing": (lambda d: d["checkpoint"].pop("location"), "checkpoint.location", "missing"),
    "no bootstrap": (lambda d: d["sink"]["kafka"].pop("bootstrap_servers"), "sink.kafka.bootstrap_servers", "missing"),
    "kafka. prefix in properties": (lambda d: d["source"]["kafka"].update(properties={"kafka.client.id": "x"}),
                                    'source.kafka.properties["kafka.client.id"]', "without 'kafka.'"),
    "no subscription": (lambda d: d["source"].pop("topics"), "source.topics", "got: none"),
    "two subscriptions": (lambda d: d["source"].update(pattern="in-.*"), "source.topics", "topics, pattern"),
    "bad pattern": (lambda d: (d["source"].pop("topics"), d["source"].update(pattern="in-(")), "source.pattern",
                    "regular expression"),
    "json without schema": (lambda d: d["source"].pop("schema"), "source.schema", "needs a schema"),
    "bytes with schema": (lambda d: d["source"].update(format="bytes"), "source.schema", "only used with"),
    "invalid avro schema": (lambda d: d["source"]["schema"].update(inline={"type": "record", "fields": 3}),
                            "source.schema.inline", "not a valid Avro schema"),
    "multi-type union": (lambda d: d["source"]["schema"].update(inline={"type": "record", "name": "R", "fields": [
        {"name": "x", "type": ["int", "string"]}]}), "source.schema.inline", "several non-null types"),
    "registry with json": (lambda d: d["source"]["schema"].update(registry={"url": "http://r:8081"}),
                           "source.schema.inline", "with a registry, format json reads a JSON Schema"),
    "avro sink without schema": (lambda d: d["sink"].update(format="avro"), "sink.schema", "needs a schema"),
    "topic and topic_column": (lambda d: d["sink"].update(topic_column="t"), "sink.topic", "exactly one"),
    "dlq without topic": (lambda d: d["errors"].pop("dlq_topic"), "errors.dlq_topic", "no DLQ topic"),
    "dlq is an input": (lambda d: d["errors"].update(dlq_topic="in"), "errors.dlq_topic", "also an input"),
    "output is an input": (lambda d: d["sink"].update(topic="in"), "sink.topic", "its own input"),
    "not a select": (lambda d: d["transform"].update(sql="DROP TABLE source"), "transform.sql", "one SELECT"),
    "does not read source": (lambda d: d["transform"].update(sql="SELECT 1 FROM other"), "transform.sql", "'source'"),
    "two statements": (lambda d: d["transform"].update(sql="SELECT * FROM source; SELECT 1"), "transform.sql", "one statement"),
    "aggregation without watermark": (
        lambda d: d["transform"].update(sql="SELECT value.id, count(*) AS value FROM source GROUP BY value.id"),
        "transform.watermark", "needs a watermark"),
    "option redoes a key": (lambda d: d["source"].update(options={"startingOffsets": "latest"}),
                            'source.options["startingOffsets"]', "its own key"),
    "kafka option in options": (lambda d: d["sink"].update(options={"kafka.acks": "all"}),
                                'sink.options["kafka.acks"]', "belong to the cluster"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_rule_reports_its_path(tmp_path, name):
    change, path, needle = CASES[name]
    found = mutate(tmp_path, change)
    matching = [v for v in found if v.path == path]
    assert matching, f"{name}: expected a violation at {path}, got {[str(v) for v in found]}"
    assert any(needle in v.message for v in matching), [v.message for v in matching]
    assert all(v.fix for v in found)


def test_valid_pipeline_has_no_violations(tmp_path):
    assert problems(tmp_path, valid(tmp_path)) == []


def test_timeout_rule_reuses_the_ordering_rule(tmp_path):
    data = valid(tmp_path)
    data["sink"]["transaction_timeout_ms"] = 60_000          # <= 10 s trigger + 120 s margin
    found = [v for v in problems(tmp_path, data) if v.path == "sink.transaction_timeout_ms"]
    assert len(found) == 1 and "130000" in found[0].message and "sink.transaction_timeout_ms" in found[0].fix
    # the YAML's own names, not the sink options' (txn.timeouts takes the names from the caller)
    assert "checkpoint.trigger 10000 ms + sink.batch_margin_ms 120000 ms" in found[0].message
    assert found[0].fix.endswith("or shorten checkpoint.trigger") and "the trigger interval" not in found[0].fix
    data["checkpoint"]["trigger"] = "available_now"
    data["sink"]["batch_margin_ms"] = 30_000                  # 0 + 30 s < 60 s: fine
    assert [v for v in problems(tmp_path, data) if v.path.startswith("sink.transaction")] == []


def test_timeout_rule_uses_the_broker_maximum(tmp_path):
    data = valid(tmp_path)
    data["sink"]["transaction_timeout_ms"] = 300_000
    found = problems(tmp_path, data, Context(broker_max_timeout_ms=200_000))
    assert paths(found) == ["sink.transaction_timeout_ms"] and "200000" in found[0].message
    assert problems(tmp_path, data, Context(broker_max_timeout_ms=300_000)) == []


def test_an_unset_prefix_is_derived_from_the_name_and_the_checkpoint(tmp_path):
    data = valid(tmp_path)
    data["sink"].pop("transactional_id_prefix")
    data["name"] = "orders enricher/v2"
    cfg, loaded = load(tmp_path, data)
    assert loaded == [] and check(cfg) == []
    prefix = cfg.sink.transactional_id_prefix
    assert prefix.startswith("orders-enricher-v2-") and len(prefix.rsplit("-", 1)[1]) == 8
    data["checkpoint"]["location"] = str(tmp_path / "another")
    assert load(tmp_path, data)[0].sink.transactional_id_prefix != prefix  # one file, two checkpoints: two prefixes


def test_at_least_once_skips_transaction_rules(tmp_path):
    data = valid(tmp_path)
    data["guarantee"] = "at_least_once"
    data["sink"].pop("transactional_id_prefix")
    data["sink"]["transaction_timeout_ms"] = 1
    assert problems(tmp_path, data) == []


def test_at_least_once_still_refuses_what_its_producer_refuses(tmp_path):
    """The at-least-once sink writes with the same idempotent producer and refuses acks=1 when the
    query starts, so validation must say so first (it used to pass such a file)."""
    data = valid(tmp_path)
    data["guarantee"] = "at_least_once"
    data["sink"]["kafka"]["properties"] = {"acks": "1"}
    assert paths(problems(tmp_path, data)) == ['sink.kafka.properties["acks"]']


def test_checkpoint_must_be_a_writable_directory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for location, needle in ((blocker, "not a directory"), (blocker / "under", "cannot be created")):
        data = valid(tmp_path)
        data["checkpoint"]["location"] = str(location)
        found = problems(tmp_path, data)
        assert paths(found) == ["checkpoint.location"] and needle in found[0].message


def test_checkpoint_in_read_only_directory(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    # root passes every permission check: answer for ``locked`` as the kernel does for other users
    real_access = os.access
    monkeypatch.setattr(rules_safety.os, "access",
                        lambda path, mode: False if Path(path) == locked else real_access(path, mode))
    data = valid(tmp_path)
    data["checkpoint"]["location"] = str(locked / "ckpt")
    assert paths(problems(tmp_path, data)) == ["checkpoint.location"]


def test_a_checkpoint_under_a_tilde_is_refused_since_nothing_expands_it(tmp_path):
    """Spark's checkpoint (Hadoop's Path) and the sink log take ``~/ck`` as a folder named ``~`` in the
    working directory; the rule once checked ``$HOME/ck`` instead, a directory nothing writes."""
    data = valid(tmp_path)
    data["checkpoint"]["location"] = "~/checkpoints/orders"
    found = problems(tmp_path, data)
    assert paths(found) == ["checkpoint.location"] and "folder named '~'" in found[0].message, found
    assert "${HOME}" in found[0].fix


def test_a_dbfs_checkpoint_is_checked_at_its_fuse_path(tmp_path, monkeypatch):
    """``dbfs:/x`` is where the sink log writes, ``/dbfs/x``: the rule checks that path (one owner:
    ``log_store.local_path``), not nothing as for a remote URI."""
    real_access = os.access
    monkeypatch.setattr(rules_safety.os, "access",
                        lambda path, mode: False if str(path) == "/" else real_access(path, mode))
    data = valid(tmp_path)
    data["checkpoint"]["location"] = "dbfs:/checkpoints/orders"
    found = problems(tmp_path, data)
    assert paths(found) == ["checkpoint.location"] and "/dbfs/checkpoints/orders" in found[0].message, found


def test_remote_checkpoints_are_only_checked_for_presence(tmp_path):
    data = valid(tmp_path)
    data["checkpoint"]["location"] = "s3a://bucket/does/not/exist"
    assert problems(tmp_path, data) == []


def test_sink_log_moved_by_option_is_checked_where_it_is(tmp_path):
    """sink.options.sinkLogLocation moves the sink log; the ownership check must read it there."""
    log = tmp_path / "elsewhere" / "sink-log"
    log.mkdir(parents=True)
    (log / "_meta.json").write_text(json.dumps({"v": 1, "prefix": "older-pipeline"}))
    data = valid(tmp_path)
    data["sink"]["options"] = {"sinkLogLocation": str(log)}
    found = problems(tmp_path, data)
    assert paths(found) == ["checkpoint.location"] and "older-pipeline" in found[0].message


def test_checkpoint_owned_by_another_prefix(tmp_path):
    log = Path(location_for(str(tmp_path / "ckpt")))
    log.mkdir(parents=True)
    (log / "_meta.json").write_text(json.dumps({"v": 1, "prefix": "older-pipeline"}))
    found = problems(tmp_path, valid(tmp_path))
    assert paths(found) == ["checkpoint.location"] and "older-pipeline" in found[0].message


def test_prefix_and_checkpoint_unique_across_files(tmp_path):
    first, _ = load(tmp_path, valid(tmp_path))
    second, _ = load_text(json.dumps(valid(tmp_path)), "other.yaml", {}, tmp_path)
    found = across_pipelines([first, second])
    assert sorted(paths(found)) == ["checkpoint.location", "sink.transactional_id_prefix"]
    assert all(v.file == "other.yaml" and "p.yaml" in v.message for v in found)


def test_connector_backstop_reports_what_the_source_refuses(tmp_path):
    found = mutate(tmp_path, lambda d: d["source"]["kafka"].update(properties={"auto.offset.reset": "earliest"}))
    assert paths(found) == ["source"] and "auto.offset.reset" in found[0].message


def test_many_mistakes_are_reported_at_once(tmp_path):
    data = valid(tmp_path)
    data["source"]["kafka"]["properties"] = {"isolation.level": "read_uncommitted"}
    data["source"]["topic"] = data["source"].pop("topics")
    data["sink"]["kafka"]["properties"] = {"acks": "1"}
    data["sink"]["transaction_timeout_ms"] = 1000
    data["sink"].pop("transactional_id_prefix")
    data["checkpoint"].pop("location")
    data["errors"].pop("dlq_topic")
    cfg, loaded = load(tmp_path, data)
    found = loaded + check(cfg)
    assert {"source.topic", "source.topics", 'source.kafka.properties["isolation.level"]',
            'sink.kafka.properties["acks"]', "sink.transaction_timeout_ms", "sink.transactional_id_prefix",
            "checkpoint.location", "errors.dlq_topic"} <= set(paths(found))


@pytest.mark.parametrize("sql,steps,expected", [
    ("SELECT key, value FROM source WHERE value.amount > 0", [], False),
    ("SELECT key, count(*) AS n FROM source GROUP BY window(ts, '1 minute'), key", [], True),
    ("SELECT DISTINCT key, value FROM source", [], True),
    ("SELECT a.key, a.value FROM source a JOIN source b ON a.key = b.key", [], True),
    ("SELECT key, value FROM source -- GROUP BY key\n", [], False),
    (None, [{"select": ["window(ts, '1 minute') AS w", "value"]}], True),
    (None, [{"filter": "value.amount > 0"}], False),
])
def test_stateful_transforms_are_aggregations_deduplications_and_joins(tmp_path, sql, steps, expected):
    from kafka_eos.config.rules import stateful
    data = valid(tmp_path)
    data["transform"] = {**({"sql": sql} if sql else {}), **({"steps": steps} if steps else {})}
    cfg, found = load(tmp_path, data)
    assert cfg is not None, found
    assert stateful(cfg.transform) is expected


@pytest.mark.parametrize("metrics,path,needle,fix", [
    ({"port": 70000}, "metrics.port", "not a TCP port", "metrics.port: 9464"),
    ({"port": 0}, "metrics.port", "at least 1", "set port to 1 or more"),
    ({"host": "http://0.0.0.0"}, "metrics.host", "not an IP address or host name", "metrics.host: 127.0.0.1"),
    ({"host": "localhost:9464"}, "metrics.host", "not an IP address or host name", "without scheme or port"),
])
def test_metrics_endpoint_rule(tmp_path, metrics, path, needle, fix):
    found = mutate(tmp_path, lambda d: d.update(metrics=metrics))
    assert [v.path for v in found] == [path], [str(v) for v in found]
    assert needle in found[0].message and fix in found[0].fix


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::", "::1", "localhost", "job", "metrics.internal"])
def test_metrics_hosts_that_bind(tmp_path, host):
    assert mutate(tmp_path, lambda d: d.update(metrics={"port": 9464, "host": host})) == []
