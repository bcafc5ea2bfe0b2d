"""The shipped alert fires in a real fault: a real Prometheus (Debian's package) with
docker/alerts.yml scrapes a running pipeline's driver; the driver is killed mid-run and
KafkaEosDriverDown goes pending, then firing after its `for: 1m`. The restart then commits what
the dead driver left and every order comes out exactly once."""
from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from integration_tests.debian_tools import ensure
from integration_tests.pipeline_cli import kafka_eos, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail
from integration_tests.test_metrics import free_port
from integration_tests.test_status import ORDERS, pipeline_file, topics  # noqa: F401 - the fixture
from kafka_eos.connectors.demo_data import order_report

ALERTS = Path(__file__).resolve().parents[1] / "docker" / "alerts.yml"


def api(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/{path}", timeout=5) as answer:
        return json.loads(answer.read())["data"]


def alert_state(port: int, name: str) -> str | None:
    states = [a["state"] for a in api(port, "alerts")["alerts"] if a["labels"]["alertname"] == name]
    return states[0] if states else None


def wait_until(check, bound_s: float, what: str, step_s: float = 0.5):
    deadline = time.monotonic() + bound_s
    while True:
        try:
            found = check()
        except OSError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} not within {bound_s} s"
        time.sleep(step_s)


@pytest.fixture
def prometheus_binary() -> str:
    found = ensure({"prometheus": "prometheus"})["prometheus"]
    assert found, "prometheus is missing: run as root with apt-get available, or `apt-get install -y prometheus`"
    return found


@pytest.mark.chaos  # ~3 min, most of it the alert's own `for: 1m`: `make chaos`
def test_driver_down_fires_when_the_driver_is_killed(bootstrap, topics, tmp_path, prometheus_binary):  # noqa: F811
    metrics_port, prometheus_port = free_port(), free_port()
    path = pipeline_file(tmp_path, topics)
    doc = yaml.safe_load(path.read_text())
    doc["checkpoint"]["trigger"] = "3 seconds"
    doc["source"]["max_offsets_per_trigger"] = 300      # several batches: the kill lands mid-run
    path.write_text(yaml.safe_dump(doc))
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ALERTS)],
        "scrape_configs": [{"job_name": "kafka-eos", "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}]}]}))
    prometheus = subprocess.Popen([prometheus_binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{prometheus_port}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / "run.log"
    run = start_kafka_eos(["run", str(path), "--metrics-port", str(metrics_port)], bootstrap, tmp_path, log)
    try:
        wait_until(lambda: "orders-json batch 1:" in log.read_text(errors="replace"), 300, "batch 1")
        wait_until(lambda: [r for r in api(prometheus_port, "query?query=up")["result"] if r["value"][1] == "1"],
                   60, "the driver scraped (up == 1)")
        assert alert_state(prometheus_port, "KafkaEosDriverDown") is None
        kill_group(run)
        killed = time.monotonic()
        wait_until(lambda: alert_state(prometheus_port, "KafkaEosDriverDown") == "pending", 30, "pending")
        wait_until(lambda: alert_state(prometheus_port, "KafkaEosDriverDown") == "firing", 120, "firing", 1.0)
        print(f"KafkaEosDriverDown firing {time.monotonic() - killed:.0f} s after the driver was killed")
    finally:
        kill_group(run)
        prometheus.terminate()
        prometheus.wait(30)
    again = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert again.code == 0, again.log() + tail(log)
    assert order_report(bootstrap, {topics[0]: ORDERS}, topics[1]) == \
        {"out": ORDERS, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
