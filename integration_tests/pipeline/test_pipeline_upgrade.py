"""Upgrade rules on a real checkpoint: run a pipeline, then ask `kafka-eos validate
--against-checkpoint` about changed versions of it before restarting (and restart with the
change it accepts)."""
from __future__ import annotations

import pytest

import copy
import json
import subprocess
import sys
from pathlib import Path

import yaml

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import EXAMPLES, REPO, kafka_eos
from integration_tests.pipeline_runs import kill_group, wait_for
from kafka_eos.connectors.spark_harness import python_env

STATEFUL_SQL = """SELECT CAST(window.start AS STRING) AS key,
       named_struct('window_start', window.start, 'orders', COUNT(*)) AS value
FROM source
GROUP BY window(event_time, '1 minute')"""


def pipeline(doc: dict, path: Path) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def example(bootstrap: str, partitions: int = 2) -> tuple[dict, str, str, str]:
    """orders-json.yaml on topics of its own (source, sink, a DLQ topic), skipping bad records."""
    source, sink, dlq = unique("orders"), unique("priced"), unique("orders-dlq")
    create_topics(bootstrap, {source: partitions, sink: 2, dlq: 1})
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [source], sink
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["sink"]["transactional_id_prefix"] = unique("upgrade")
    doc["errors"] = {"on_decode_error": "skip"}
    return doc, source, sink, dlq


@pytest.mark.long  # minutes: make long (CI, after make test)
def test_validate_against_checkpoint_before_a_restart(bootstrap, tmp_path):
    doc, source, sink, dlq = example(bootstrap)
    first = produce_orders(bootstrap, source, 800, aborted_every=400, aborted_size=10)
    run = kafka_eos(["run", str(pipeline(doc, tmp_path / "v1.yaml")), "--once"], bootstrap, tmp_path)
    assert run.code == 0, run.log()
    records = tmp_path / "orders-json" / "kafka-eos-pipeline"
    assert sorted(p.name for p in records.iterdir()) == ["0.json"]
    assert json.loads((records / "0.json").read_text())["scans"] == 1

    # (a) another stateless SQL keeps the checkpoint; the restart with it resumes exactly once
    stateless = copy.deepcopy(doc)
    stateless["transform"]["sql"] = doc["transform"]["sql"].replace(
        "WHERE value.quantity > 0", "WHERE value.quantity > 0 AND value.customer IS NOT NULL")
    v2 = pipeline(stateless, tmp_path / "v2.yaml")
    check = kafka_eos(["validate", "--against-checkpoint", str(v2)], bootstrap, tmp_path, timeout=120)
    assert check.code == 0, check.log()
    assert "transform.sql/steps/watermark changed (stateless transform): keeps the checkpoint" in check.stdout
    second = produce_orders(bootstrap, source, 400, aborted_every=400, aborted_size=10)
    again = kafka_eos(["run", str(v2), "--once"], bootstrap, tmp_path)
    assert again.code == 0, again.log()
    assert order_report(bootstrap, {first.run: 800, second.run: 400}, topic=sink) == \
        {"out": 1200, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
    assert sorted(p.name for p in records.iterdir()) == ["0.json", "1.json"], "the restart recorded its shape"
    unchanged = kafka_eos(["validate", "--against-checkpoint", str(v2)], bootstrap, tmp_path, timeout=120)
    assert unchanged.code == 0 and "no change the checkpoint depends on" in unchanged.stdout, unchanged.log()

    # (b) a DLQ added: a second source scan, Spark's offset log has one
    with_dlq = copy.deepcopy(stateless)
    with_dlq["errors"] = {"on_decode_error": "dlq", "dlq_topic": dlq}
    check = kafka_eos(["validate", "--against-checkpoint", str(pipeline(with_dlq, tmp_path / "v3.yaml"))],
                      bootstrap, tmp_path, timeout=120)
    assert check.code == 1, check.log()
    assert "errors.on_decode_error: dlq cannot resume checkpoint" in check.stderr
    assert "1 source scan(s) per batch; dlq needs 2): needs a new checkpoint" in check.stderr
    assert "fix: keep on_decode_error fail or skip for this checkpoint, or start with a new checkpoint.location" \
        in check.stderr

    # (c) a stateful transform: an aggregation by window, with a watermark
    aggregated = copy.deepcopy(stateless)
    watermark = {"column": "event_time", "expression": "value.created_at", "delay": "1 minute"}
    aggregated["transform"] = {"sql": STATEFUL_SQL, "watermark": watermark}
    check = kafka_eos(["validate", "--against-checkpoint", str(pipeline(aggregated, tmp_path / "v4.yaml"))],
                      bootstrap, tmp_path, timeout=120)
    assert check.code == 1, check.log()
    assert "a stateful operation (GROUP BY, window, DISTINCT or join) added" in check.stderr
    assert "needs a new checkpoint\n      fix: start with a new checkpoint.location" in check.stderr


@pytest.mark.chaos  # a long run: `make chaos` (the CI suite keeps a shorter case of the same kind)
def test_a_pending_batch_must_be_finished_before_its_sink_partitions_change(bootstrap, tmp_path):
    """The run is killed after batch 0's commit decision: a change of the input partitioning waits
    until the previous file finished that batch."""
    doc, source, sink, _ = example(bootstrap)
    faults = tmp_path / "faults"
    faults.mkdir()
    doc["sink"]["options"] = {"faultInjection": "after_decision@0", "faultInjectionDir": str(faults)}
    before = pipeline(doc, tmp_path / "v1.yaml")
    orders = produce_orders(bootstrap, source, 600, aborted_every=600, aborted_size=10)
    env = {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(tmp_path)}
    log = tmp_path / "run.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kafka_eos.connectors.cli", "run", str(before), "--once"],
                                env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    wait_for((faults, "after_decision.*"), proc, 300, log)
    kill_group(proc)

    rescaled = copy.deepcopy(doc)
    rescaled["source"]["options"] = {"minPartitions": "6"}
    after = pipeline(rescaled, tmp_path / "v2.yaml")
    check = kafka_eos(["validate", "--against-checkpoint", str(after)], bootstrap, tmp_path, timeout=120)
    assert check.code == 1, check.log()
    assert "minPartitions changed (None -> 6), while batch 0 is decided but not committed" in check.stderr
    assert "fix: finish the pending batch first: run the previous pipeline file on this checkpoint until batch 0 " \
        "commits" in check.stderr

    finish = kafka_eos(["run", str(before), "--once"], bootstrap, tmp_path)
    assert finish.code == 0, finish.log()
    check = kafka_eos(["validate", "--against-checkpoint", str(after)], bootstrap, tmp_path, timeout=120)
    assert check.code == 0, check.log()
    assert "minPartitions changed (None -> 6): keeps the checkpoint" in check.stdout
    assert order_report(bootstrap, {orders.run: 600}, topic=sink) == \
        {"out": 600, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
