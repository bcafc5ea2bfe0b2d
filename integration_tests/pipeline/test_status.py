"""`kafka-eos status` against the real broker and Spark: healthy after a clean run, decided-pending
after the driver dies right after its decision (the crash matrix's ``after_decision`` point),
and exit 2 within a bounded time when the broker is unreachable."""
from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import psutil
import pytest
import yaml

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, kill_supervised_run, tail

ORDERS = 3000


def pipeline_file(tmp_path: Path, topics: tuple[str, str], sink_options: dict | None = None) -> Path:
    """orders-json.yaml on topics of its own, skip on bad input, batches of 1000 records."""
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [topics[0]], topics[1]
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["source"]["max_offsets_per_trigger"] = 1000
    doc["sink"]["transactional_id_prefix"] = unique("status")
    doc["sink"]["options"] = sink_options or {}
    doc["errors"] = {"on_decode_error": "skip"}
    path = tmp_path / "orders-status.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def topics(bootstrap) -> tuple[str, str]:
    names = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {names[0]: 3, names[1]: 3})
    produce_orders(bootstrap, names[0], ORDERS, run=names[0], aborted_every=1000, aborted_size=20)
    return names


def status(path: Path, bootstrap: str, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    """(exit code, the --json document, the human-readable text)."""
    as_json = kafka_eos(["status", str(path), "--json", *extra], bootstrap, tmp_path, timeout=120)
    text = kafka_eos(["status", str(path), *extra], bootstrap, tmp_path, timeout=120)
    assert as_json.code == text.code, (as_json.log(), text.log())
    return as_json.code, json.loads(as_json.stdout), text.stdout


@pytest.mark.chaos  # `make chaos`: make test keeps the decided-pending case, which ends healthy after a run
def test_healthy_after_a_clean_run(bootstrap, topics, tmp_path):
    path = pipeline_file(tmp_path, topics)
    run = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert run.code == 0, run.log()
    code, doc, text = status(path, bootstrap, tmp_path)
    assert code == 0, text
    assert doc["format_version"] == 1 and doc["status"] == "healthy" and doc["attention"] == []
    checkpoint = doc["checkpoint"]
    assert checkpoint["last_committed_batch"] == checkpoint["last_planned_batch"] >= 2
    rows = doc["source"]["partitions"]
    assert len(rows) == 3 and doc["source"]["total_lag"] == 0
    assert all(r["position"] == r["end"] and r["lag"] == 0 for r in rows), rows
    assert doc["sink_log"]["state"] == "committed" and doc["sink_log"]["batch"] == checkpoint["last_committed_batch"]
    assert doc["open_transactions"]["transactions"] == []
    assert "status: healthy" in text and "sink log: " in text and " committed (" in text


def test_decided_pending_after_the_driver_dies_then_healthy_after_the_supervised_restart(bootstrap, topics,
                                                                                         tmp_path):
    """`kafka-eos run --restarts 1`: its run (the driver) is killed right after batch 1's decision.
    The supervisor is frozen meanwhile (SIGSTOP), so `status` sees the dead run's state; resumed, it
    restarts the run, which commits the decided batch and finishes: every order exactly once."""
    faults = tmp_path / "faults"
    faults.mkdir()
    path = pipeline_file(tmp_path, topics, {"faultInjection": "after_decision@1", "faultInjectionDir": str(faults)})
    log = tmp_path / "run.log"
    supervisor = start_kafka_eos(["run", str(path), "--once", "--restarts", "1"], bootstrap, tmp_path, log)
    try:
        kill_supervised_run(supervisor, faults, "after_decision", log, freeze_supervisor=True)

        code, doc, text = status(path, bootstrap, tmp_path)
        print(text)
        assert code == 1, text
        assert doc["status"] == "attention" and doc["checkpoint"]["last_committed_batch"] == 0
        assert doc["checkpoint"]["last_planned_batch"] == 1
        sink_log = doc["sink_log"]
        assert (sink_log["state"], sink_log["batch"]) == ("decided-pending", 1) and sink_log["pending"], sink_log
        pending = {p["transactional_id"] for p in sink_log["pending"]}
        opened = {t["transactional_id"]: t for t in doc["open_transactions"]["transactions"]}
        assert pending <= set(opened), (pending, opened)
        assert all(0 <= opened[t]["age_ms"] < opened[t]["timeout_ms"] == 300_000 for t in pending)
        assert doc["source"]["total_lag"] > 0
        [line] = doc["attention"]
        assert "batch 1 is decided but not committed" in line and f"kafka-eos run {path}" in line
        assert "\nattention: batch 1 is decided but not committed: " in text  # the age differs between the two calls
        assert text.rstrip().endswith("status: needs attention (1)")

        supervisor.send_signal(signal.SIGCONT)
        assert supervisor.wait(400) == 0, tail(log)
    finally:
        supervisor.send_signal(signal.SIGCONT)
        for left in psutil.Process(supervisor.pid).children() if supervisor.poll() is None else []:
            os.killpg(left.pid, signal.SIGKILL)
        kill_group(supervisor)
    assert "orders-json: the run exited with -9; restart 1 of 1 in 1 s" in log.read_text(), tail(log)
    assert order_report(bootstrap, {topics[0]: ORDERS}, topics[1]) == \
        {"out": ORDERS, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
    code, doc, text = status(path, bootstrap, tmp_path)
    assert code == 0, text
    assert doc["sink_log"]["state"] == "committed" and doc["source"]["total_lag"] == 0
    # issue 46: the output read back holds each batch's evidence, the one the restart committed too
    checked = kafka_eos(["verify", str(path), "--json"], bootstrap, tmp_path, timeout=300)
    verdicts = {v["batch"]: v for v in json.loads(checked.stdout)["per_batch"]}
    assert checked.code == 0 and 1 in verdicts, checked.log()
    assert all(v["outcome"] == "verified" for v in verdicts.values()), verdicts


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_broker_exits_2_within_the_timeout(tmp_path):
    path = pipeline_file(tmp_path, ("orders", "orders-priced"))
    started = time.monotonic()
    run = kafka_eos(["status", str(path), "--timeout", "3"], f"127.0.0.1:{closed_port()}", tmp_path, timeout=60)
    elapsed = time.monotonic() - started
    assert run.code == 2, run.log()
    assert elapsed < 30, elapsed
    assert "broker unreachable: source.kafka: cannot reach Kafka" in run.stdout
    assert run.stdout.rstrip().endswith("status: broker unreachable")
    assert not (tmp_path / "orders-json").exists()  # status creates no checkpoint
