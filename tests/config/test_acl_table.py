"""One ACL table: README.md and config/README.md show ``config.acl_table.acl_table()``, ``validate``
asks the brokers exactly what the table says it asks, no more, and every ``kafka-eos`` command run
on a pipeline's file has its rows (or is said to need none)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_eos.config import acl_table, live
from kafka_eos.offsets.acl_advice import MissingAcl
from kafka_eos.txn.cluster import acl_checks, broker_configs
from tests.factories import load, valid

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- acls -->\n(.*?)\n<!-- /acls -->", re.DOTALL)
# the names the test pipelines give each resource, and the row name (YAML key or fixed name) they stand for
KEYS = {"in": "source.topics", "g1": "source.kafka.properties.group.id", "out": "sink.topic",
        "in-dlq": "errors.dlq_topic", "late": "transform.watermark.late_topic", "t-eos": "sink.transactional_id_prefix",
        live.CLAIM_TOPIC: live.CLAIM_TOPIC, "kafka-cluster": "kafka-cluster"}


@pytest.mark.parametrize("doc", ["README.md", "config/README.md"])
def test_the_docs_show_the_codes_table(doc):
    found = BLOCK.findall((ROOT / doc).read_text())
    assert found == [acl_table.acl_table()], (
        f"{doc}'s ACL table (between <!-- acls --> and <!-- /acls -->) is not config/acl_table.py's ACLS: replace it "
        "with the output of: python -c 'from kafka_eos.config.acl_table import acl_table; print(acl_table())'")


def _asked(monkeypatch) -> set[tuple[str, str, str]]:
    """Record every (resource type, name, operation) validate's live checks ask; the brokers answer."""
    asked: set[tuple[str, str, str]] = set()

    def topics(conf, names, op, timeout_s):
        asked.update(("topic", n, op) for n in names)
        return []

    def sink(conf, names, prefix, timeout_s):
        asked.update({("topic", n, "Write") for n in names} | {("transactional-id", prefix, "Write")})
        return []

    def describe_configs(conf, timeout_s):
        asked.add(("cluster", "kafka-cluster", "DescribeConfigs"))
        return 900_000

    monkeypatch.setattr(acl_checks, "topics_missing", topics)
    monkeypatch.setattr(acl_checks, "sink_missing", sink)
    monkeypatch.setattr(acl_checks, "group_missing", lambda conf, group, t: asked.add(("group", group, "Read")) or [])
    monkeypatch.setattr(broker_configs, "transaction_max_timeout_ms", describe_configs)
    monkeypatch.setattr(broker_configs, "broker_ids", lambda admin, timeout_s: [1])
    monkeypatch.setattr(broker_configs, "admin_client", lambda conf: None)
    return asked


def _pipeline(tmp_path, guarantee: str = "exactly_once", assign: bool = False) -> dict:
    data = valid(tmp_path)
    data["guarantee"] = guarantee
    data["source"]["kafka"]["properties"] = {"group.id": "g1"}
    data["transform"]["watermark"] = {"column": "timestamp", "delay": "1 minute", "late_topic": "late"}
    if assign:
        del data["source"]["topics"]
        data["source"]["assign"] = {"in": [0]}
    return data


def _rows(exactly_once: bool) -> set[tuple[str, str, str]]:
    return {(acl.resource, name, op) for acl in acl_table.ACLS for name in acl.names for op in acl.asks
            if exactly_once or "exactly_once" not in acl.when}


@pytest.mark.parametrize("guarantee,assign", [("exactly_once", False), ("exactly_once", True), ("at_least_once", False)])
def test_validate_asks_what_the_table_says(monkeypatch, tmp_path, guarantee, assign):
    asked = _asked(monkeypatch)
    cfg, problems = load(tmp_path, _pipeline(tmp_path, guarantee, assign))
    assert problems == []
    _, found = live.live_context(cfg)
    assert found == []
    source = "source.assign" if assign else "source.topics"
    seen = {(kind, source if KEYS[name] == "source.topics" else KEYS[name], op) for kind, name, op in asked}
    expected = {row for row in _rows(guarantee == "exactly_once") if row[1] != ("source.topics" if assign else
                                                                              "source.assign")}
    assert seen == expected


def test_a_missing_claim_topic_acl_names_its_option_and_the_late_topic_its_key(monkeypatch, tmp_path):
    _asked(monkeypatch)
    monkeypatch.setattr(acl_checks, "sink_missing", lambda conf, topics, prefix, t: [
        MissingAcl("User:etl", "topic", name, "Write") for name in sorted(topics) if name in ("late", live.CLAIM_TOPIC)])
    cfg, _ = load(tmp_path, _pipeline(tmp_path))
    _, found = live.live_context(cfg)
    assert sorted(v.path for v in found) == ["sink.options.prefixClaimTopic", "transform.watermark.late_topic"]
    assert all("kafka-acls --bootstrap-server localhost:9092 --add" in v.fix for v in found)


def test_prefix_claim_off_asks_nothing_of_the_claim_topic(monkeypatch, tmp_path):
    asked = _asked(monkeypatch)
    data = _pipeline(tmp_path)
    data["sink"]["options"] = {"prefixClaim": "off"}
    cfg, _ = load(tmp_path, data)
    live.live_context(cfg)
    assert not any(name == live.CLAIM_TOPIC for _, name, _ in asked)


def test_every_command_has_its_rows():
    """``COMMANDS`` is every command the CLI runs on a pipeline's file; each has rows or needs none."""
    from kafka_eos.connectors.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    cli = set(sub.choices) - {"demo", "dev"}  # local tooling: a broker of their own
    named = {command.split()[0] for command in acl_table.COMMANDS}
    assert cli - named == set(), f"add the new command(s) to config/live.py COMMANDS and ACLS: {cli - named}"
    in_rows = {command for acl in acl_table.ACLS for command in acl.commands}
    assert in_rows <= set(acl_table.COMMANDS)
    assert set(acl_table.COMMANDS) - set(acl_table.NO_ACL) == in_rows and not set(acl_table.NO_ACL) & in_rows


def test_the_dev_brokers_grants_cover_the_table():
    """The secured test broker's user (``connectors/dev/acls.pipeline_acls``, what the integration tests
    run with) is granted every ACL ``run`` needs: the table names nothing the proofs did without. (The
    operator commands' rows, e.g. ``verify``'s Read on the output, are not granted to that user.)"""
    from confluent_kafka.admin import AclOperation

    from kafka_eos.connectors.dev.acls import pipeline_acls
    names = {"source.topics": "in", "source.assign": "in", "source.kafka.properties.group.id": "g1",
             "sink.topic": "out", "errors.dlq_topic": "out", "transform.watermark.late_topic": "out",
             "sink.transactional_id_prefix": "t-eos", "checkpoint.records": "_kafka_eos_store-t-eos"}
    kinds = {"topic": "TOPIC", "group": "GROUP", "transactional-id": "TRANSACTIONAL_ID", "cluster": "BROKER"}
    granted = {(b.restype.name, b.name, b.operation) for b in pipeline_acls("etl", ["in"], ["out"], "t-eos", ["g1"])}
    needed = {(kinds[acl.resource], names.get(name, name), AclOperation[re.sub(r"(?<!^)([A-Z])", r"_\1", op).upper()])
              for acl in acl_table.ACLS if "run" in acl.commands for name in acl.names for op in acl.operations}
    assert needed - granted == set()
