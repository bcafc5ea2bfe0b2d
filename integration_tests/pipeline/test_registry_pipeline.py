"""`kafka-eos run` with a real schema registry (the ``schema_registry`` fixture), broker and Spark.

The registry requires basic auth (docker/local providers): every run below goes through real
credentials, and no output of any run may show the password.
"""
from __future__ import annotations

import pytest
import yaml

from kafka_eos.connectors.demo_data import create_topics
from integration_tests.kafka_tools import assert_exactly_once, produce, read_all, tally, unique
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, progress_lines
from integration_tests.registry_tools import (PAYMENT, PAYMENT_V1, PAYMENT_V2, cli_env, client, decode_by_id,
                                              payment, register, wire)

EXAMPLE = EXAMPLES / "payments-registry.yaml"


def assert_no_password(registry, *texts: str) -> None:
    if registry.user_info:
        password = registry.user_info.split(":", 1)[1]
        assert not any(password in text for text in texts), "the registry password was printed"


def test_example_reads_wire_format_by_id_and_writes_it_exactly_once(bootstrap, schema_registry, tmp_path):
    """payments-registry.yaml unchanged: input written with v1 and v2 of payments-value (and an
    aborted transaction), read into payment.avsc, filtered, written in wire format under the id
    the sink registered; every kept id exactly once in the read_committed output."""
    create_topics(bootstrap, {"payments": 3, "payments-clean": 3})
    v1, v2 = register(schema_registry, "payments-value", PAYMENT_V1), register(schema_registry, "payments-value", PAYMENT_V2)
    assert v1 != v2
    run, n = unique("pay"), 400
    records = [(f"{run}-{i}".encode(), wire(*((v1, PAYMENT_V1) if i % 2 else (v2, PAYMENT_V2)),
                                             payment(run, i, 1 if i % 2 else 2))) for i in range(n)]
    produce(bootstrap, "payments", records[: n // 2], transactional=unique("payments"))
    produce(bootstrap, "payments", records[n // 2:])
    aborted = [(b"x", wire(v2, PAYMENT_V2, payment(f"{run}-aborted", i, 2))) for i in range(2, 30)]
    produce(bootstrap, "payments", aborted, transactional=unique("payments-abort"), commit=False)

    result = kafka_eos(["run", str(EXAMPLE), "--once"], bootstrap, tmp_path, env=cli_env(schema_registry))
    assert result.code == 0, result.log()
    assert progress_lines(result, "payments-registry"), result.stdout
    assert_no_password(schema_registry, result.stdout, result.stderr)

    sink_id = client(schema_registry).get_latest_version("payments-clean-value").schema_id
    decoded = [decode_by_id(schema_registry, m.value()) for m in read_all(bootstrap, "payments-clean")]
    ours = [(schema_id, r) for schema_id, r in decoded if r["payment_id"].startswith(f"{run}-")]
    assert {schema_id for schema_id, _ in ours} == {sink_id}, "each output record carries the registered id"
    kept = [f"{run}-{i}" for i in range(n) if i % 10 - 1 > 0]
    assert_exactly_once(tally([r["payment_id"] for _, r in ours], kept))
    currency = {r["payment_id"]: r["currency"] for _, r in ours}
    assert {currency[i] for i in kept if int(i.rsplit("-", 1)[1]) % 2} == {"EUR"}, "v1 records get the default"
    assert {currency[i] for i in kept if not int(i.rsplit("-", 1)[1]) % 2} == {"USD"}, "v2 records keep theirs"
    assert sorted(r["payment_id"] for _, r in ours) == sorted(kept)


@pytest.fixture
def dlq_pipeline(tmp_path):
    """payments-registry.yaml on topics of its own, with ``on_decode_error: dlq``."""
    topics = {"source": unique("payments"), "sink": unique("clean"), "dlq": unique("payments-dlq")}
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [topics["source"]], topics["sink"]
    for side in ("source", "sink"):
        doc[side]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "payment.avsc")
    doc["sink"]["transactional_id_prefix"] = unique("registry-dlq")
    doc["errors"] = {"on_decode_error": "dlq", "dlq_topic": topics["dlq"]}
    path = tmp_path / "payments-dlq.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, topics


@pytest.mark.chaos  # `make chaos`: make test keeps the DLQ of the JSON example (test_pipeline_run)
def test_an_unknown_schema_id_goes_to_the_dlq_with_the_reason(bootstrap, schema_registry, tmp_path, dlq_pipeline):
    path, topics = dlq_pipeline
    create_topics(bootstrap, {topics["source"]: 2, topics["sink"]: 2, topics["dlq"]: 1})
    known = register(schema_registry, f"{topics['source']}-value", PAYMENT)
    unknown = 987_654_321
    run = unique("pay")
    good = [(f"{run}-{i}".encode(), wire(known, PAYMENT, payment(run, i, 2))) for i in range(2, 9)]
    bad = [(f"{run}-bad-{i}".encode(), wire(unknown, PAYMENT, payment(run, 100 + i, 2))) for i in range(3)]
    produce(bootstrap, topics["source"], good + bad, transactional=unique("in"))

    result = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "ck", env=cli_env(schema_registry))
    assert result.code == 0, result.log()
    assert_no_password(schema_registry, result.stdout, result.stderr)
    out = [decode_by_id(schema_registry, m.value())[1]["payment_id"] for m in read_all(bootstrap, topics["sink"])]
    report = tally(out, [k.decode() for k, _ in good])
    assert_exactly_once(report)
    assert report.records == 7
    dlq = read_all(bootstrap, topics["dlq"])
    assert sorted(m.key() for m in dlq) == sorted(k for k, _ in bad)
    by_key = dict(bad)
    for message in dlq:
        headers = {k: v.decode() for k, v in message.headers()}
        assert message.value() == by_key[message.key()], "the DLQ keeps the original bytes"
        assert headers["kafka-eos.error"].startswith(f"unknown schema id {unknown}: not in the schema registry at "
                                                     f"{schema_registry.url}"), headers
        assert headers["kafka-eos.source.topic"] == topics["source"]
