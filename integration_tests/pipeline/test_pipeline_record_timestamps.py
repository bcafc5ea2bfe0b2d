"""Record timestamps on the real broker and Spark, in the session's SparkSession (issue 66, item 3).

- ``sink.timestamp_column``: each output record's CreateTime is its row's column (a day old, so
  older than the commit less the transaction timeout: ``verify`` must still find the records), a
  null row the producer's clock; every id once in read_committed output; ``verify`` checks the
  timestamps against the tasks' digests of them and passes, and fails (exit 6) once the evidence
  says other timestamps than the records in the log carry.
- a copy (``emit=offsetRanges``): each output record keeps its source record's timestamp; every id
  once; ``verify`` passes over the copy's evidence.
- a windowed count with ``timestamp_column: window.end``: each window's record carries its end.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import TIMESTAMP_CREATE_TIME, Producer

from integration_tests.kafka_tools import check_exactly_once, create_topic, produce, read_all, unique
from integration_tests.pipeline_cli import start_kafka_eos
from integration_tests.pipeline_runs import kill_group, wait_for
from kafka_eos.config.loader import load_text
from kafka_eos.connectors.operate.verify import verify
from kafka_eos.connectors.pipeline.builder import passes_through
from kafka_eos.connectors.pipeline.runner import run_query
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.txn.audit.output_audit import PASSED
from kafka_eos.txn.log.sink_log import SinkLogReader

ORDERS, COPIES = 300, 200
DAY_MS = 86_400_000
SCHEMA = {"type": "record", "name": "Order",
          "fields": [{"name": "id", "type": "long"}, {"name": "created", "type": ["null", "long"]}]}
SQL = ("SELECT CAST(value.id AS STRING) AS key, to_json(value) AS value, "
       "timestamp_millis(value.created) AS created FROM source")


def load(tmp_path: Path, doc: dict):
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    cfg, problems = load_text(path.read_text(), str(path))
    assert cfg is not None and not problems, problems
    return cfg


def created_of(i: int, base_ms: int) -> int | None:
    return None if i % 10 == 0 else base_ms + i * 1_000  # every 10th order has none: the producer's clock


def assert_verified(cfg) -> None:
    report = verify(cfg)
    assert report.exit_code == 0 and {v.outcome for v in report.verdicts} == {PASSED}, report.document()
    reader = SinkLogReader(sink_config(sink_options(cfg)).log_location)
    handles = [h for b in reader.batch_ids() for h in reader.get(b).handles if h.records]
    assert handles and all(h.timestamp_digests for h in handles), "the evidence covers the timestamps"


def stamped_doc(bootstrap: str, source: str, out: str, tmp_path: Path, **sink) -> dict:
    return {"version": 1, "name": "stamped",
            "source": {"kafka": {"bootstrap_servers": bootstrap}, "topics": [source], "starting_offsets": "earliest",
                       "format": "json", "schema": {"inline": SCHEMA}, "max_offsets_per_trigger": 100},
            "transform": {"sql": SQL},
            "sink": {"kafka": {"bootstrap_servers": bootstrap}, "topic": out, "format": "string",
                     "timestamp_column": "created", "transactional_id_prefix": unique("stamped"), **sink},
            "checkpoint": {"location": str(tmp_path / "cp")}}


def seed_orders(bootstrap: str, source: str) -> int:
    """The orders, their created times a day old; returns the base time."""
    base = int(time.time() * 1000) - DAY_MS
    produce(bootstrap, source, [(None, json.dumps({"id": i, "created": created_of(i, base)}).encode())
                                for i in range(ORDERS)], transactional=unique("ts-in"))
    return base


def assert_stamped(bootstrap: str, out: str, base: int, run: tuple[int, int]) -> None:
    """Every id once in read_committed output, its CreateTime its created time (none: within ``run``)."""
    report = check_exactly_once(bootstrap, out, expected=list(range(ORDERS)), id_of=lambda m: json.loads(m.value())["id"])
    assert report.ok, report.line()
    for message in read_all(bootstrap, out):
        i = json.loads(message.value())["id"]
        kind, at = message.timestamp()
        assert kind == TIMESTAMP_CREATE_TIME, (i, kind)
        want = created_of(i, base)
        if want is None:
            assert run[0] <= at <= run[1], (i, at, run)
        else:
            assert at == want, (i, at, want)


def tamper_timestamp_digests(log: Path) -> int:
    """Change what the sink log says the tasks wrote as timestamps (as if the output's records had
    other timestamps than the batch wrote); returns the handles changed."""
    changed = 0
    for path in log.glob("*.json"):
        if path.name.startswith("_"):
            continue
        doc = json.loads(path.read_text())
        for handle in doc.get("handles", []):
            for partitions in handle.get("timestamp_digests", {}).values():
                for p in partitions:
                    partitions[p] = "0" * 16
                    changed += 1
        path.write_text(json.dumps(doc))
    return changed


def test_a_timestamp_column_is_each_records_create_time_exactly_once(spark, bootstrap, tmp_path):
    source, out = create_topic(bootstrap, unique("ts-orders"), 2), create_topic(bootstrap, unique("ts-out"), 3)
    base = seed_orders(bootstrap, source)
    cfg = load(tmp_path, stamped_doc(bootstrap, source, out, tmp_path))
    before = int(time.time() * 1000)
    run_query(spark, cfg, once=True, emit=lambda line: None)
    assert_stamped(bootstrap, out, base, (before, int(time.time() * 1000)))
    assert_verified(cfg)
    moved = tamper_timestamp_digests(tmp_path / "cp" / "kafka-eos-sink")
    report = verify(cfg)
    assert report.exit_code == 6 and moved, report.document()
    assert any("timestamps of the records" in p for v in report.verdicts for p in v.problems), report.document()


def test_a_copy_keeps_its_source_records_timestamps(spark, bootstrap, tmp_path):
    source, out = create_topic(bootstrap, unique("ts-copy-in"), 2), create_topic(bootstrap, unique("ts-copy-out"), 2)
    base = int(time.time() * 1000) - DAY_MS
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(COPIES):
        producer.produce(source, key=b"%d" % i, value=b"%d" % i, timestamp=base + i * 7_000)
    assert producer.flush(30) == 0
    cfg = load(tmp_path, {
        "version": 1, "name": "copy",
        "source": {"kafka": {"bootstrap_servers": bootstrap}, "topics": [source], "starting_offsets": "earliest"},
        "sink": {"kafka": {"bootstrap_servers": bootstrap}, "topic": out, "transactional_id_prefix": unique("copy")},
        "checkpoint": {"location": str(tmp_path / "cp")}})
    assert passes_through(cfg), "the offset-range path: the sink task reads and writes the records"
    run_query(spark, cfg, once=True, emit=lambda line: None)

    report = check_exactly_once(bootstrap, out, expected=list(range(COPIES)), id_of=lambda m: int(m.value()))
    assert report.ok, report.line()
    stamps = {int(m.value()): m.timestamp() for m in read_all(bootstrap, out)}
    assert stamps == {i: (TIMESTAMP_CREATE_TIME, base + i * 7_000) for i in range(COPIES)}
    assert_verified(cfg)


WINDOW_SQL = ("SELECT CAST(unix_millis(window.start) AS STRING) AS key, "
              "to_json(named_struct('start_ms', unix_millis(window.start), 'n', COUNT(*))) AS value, window "
              "FROM source GROUP BY window(event_time, '1 minute')")


def test_a_windowed_count_writes_each_windows_end_as_its_records_timestamp(spark, bootstrap, tmp_path):
    source, out = create_topic(bootstrap, unique("ts-clicks"), 1), create_topic(bootstrap, unique("ts-windows"), 2)
    t0 = (int(time.time() * 1000) - DAY_MS) // 60_000 * 60_000
    produce(bootstrap, source, [(None, json.dumps({"at": t0 + i * 500}).encode()) for i in range(600)],
            transactional=unique("ts-clicks-in"))  # 5 minutes of event time, in order
    cfg = load(tmp_path, {
        "version": 1, "name": "windows",
        "source": {"kafka": {"bootstrap_servers": bootstrap}, "topics": [source], "starting_offsets": "earliest",
                   "max_offsets_per_trigger": 100, "format": "json",
                   "schema": {"inline": {"type": "record", "name": "Click", "fields": [{"name": "at", "type": "long"}]}}},
        "transform": {"watermark": {"column": "event_time", "expression": "timestamp_millis(value.at)",
                                    "delay": "10 seconds"}, "sql": WINDOW_SQL},
        "sink": {"kafka": {"bootstrap_servers": bootstrap}, "topic": out, "format": "string",
                 "timestamp_column": "window.end", "transactional_id_prefix": unique("windows")},
        "checkpoint": {"location": str(tmp_path / "cp")}})
    run_query(spark, cfg, once=True, emit=lambda line: None)

    windows = [(json.loads(m.value()), m.timestamp()) for m in read_all(bootstrap, out)]
    starts = [w["start_ms"] for w, _ in windows]
    assert len(starts) >= 3 and len(set(starts)) == len(starts), starts  # the watermark closed some, each once
    for window, stamp in windows:
        assert stamp == (TIMESTAMP_CREATE_TIME, window["start_ms"] + 60_000), (window, stamp)
        assert window["n"] == 120, window


@pytest.mark.chaos  # a driver killed: `make chaos`
def test_a_timestamp_column_pipeline_killed_after_its_decision_is_exactly_once_with_its_timestamps(
        spark, bootstrap, tmp_path):
    """``kafka-eos run`` killed after batch 1's commit decision (its handles, with their timestamp
    digests, in the sink log; its transactions open), then run again: recovery commits them."""
    source, out = create_topic(bootstrap, unique("ts-orders"), 2), create_topic(bootstrap, unique("ts-out"), 3)
    base = seed_orders(bootstrap, source)
    faults = tmp_path / "faults"
    faults.mkdir()
    doc = stamped_doc(bootstrap, source, out, tmp_path,
                      options={"faultInjection": "after_decision@1", "faultInjectionDir": str(faults)})
    path = tmp_path / "stamped.yaml"
    path.write_text(yaml.safe_dump(doc))
    before, log = int(time.time() * 1000), tmp_path / "run.log"
    proc = start_kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, log)
    try:
        wait_for((faults, "after_decision.*"), proc, 400, log)
    finally:
        kill_group(proc)
    doc["sink"].pop("options")
    cfg = load(tmp_path, doc)
    run_query(spark, cfg, once=True, emit=lambda line: None)
    assert_stamped(bootstrap, out, base, (before, int(time.time() * 1000)))
    assert_verified(cfg)
