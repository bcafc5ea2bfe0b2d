"""The shipped alerting rules and dashboard, checked by Prometheus' own promtool (Debian's
``prometheus`` package, installed when missing): the scrape config and its rule files load, every
alert fires on the series that should raise it and only there (docker/alerts-test.yml), and every
dashboard query is valid PromQL."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from integration_tests.debian_tools import ensure

DOCKER = Path(__file__).resolve().parents[2] / "docker"


@pytest.fixture(scope="module")
def promtool() -> str:
    found = ensure({"promtool": "prometheus"})["promtool"]
    assert found, "promtool is missing: run as root with apt-get available, or `apt-get install -y prometheus`"
    return found


def run(promtool: str, *args: str, cwd: Path = DOCKER) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_scrape_config_and_its_alert_rules_load(promtool):
    checked = run(promtool, "check", "config", "prometheus.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rules = sum(len(g["rules"]) for g in yaml.safe_load((DOCKER / "alerts.yml").read_text())["groups"])
    assert f"SUCCESS: {rules} rules found" in checked.stdout, checked.stdout


def test_every_alert_fires_on_its_series_and_a_changed_threshold_is_caught(promtool, tmp_path):
    tested = run(promtool, "test", "rules", "alerts-test.yml")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
    loose = (DOCKER / "alerts.yml").read_text().replace(
        "> on (pipeline) group_left max by (pipeline) (kafka_eos_stall_threshold_seconds)",
        "> on (pipeline) group_left 5 * max by (pipeline) (kafka_eos_stall_threshold_seconds)")
    assert loose != (DOCKER / "alerts.yml").read_text()
    (tmp_path / "alerts.yml").write_text(loose)
    (tmp_path / "alerts-test.yml").write_text((DOCKER / "alerts-test.yml").read_text())
    caught = run(promtool, "test", "rules", "alerts-test.yml", cwd=tmp_path)
    assert caught.returncode != 0 and "KafkaEosOutputHeldBack" in caught.stdout + caught.stderr, caught.stdout


def test_every_dashboard_query_is_valid_promql(promtool, tmp_path):
    panels = json.loads((DOCKER / "grafana-dashboard.json").read_text())["panels"]
    exprs = [t["expr"].replace("$pipeline", ".*") for p in panels for t in p["targets"]]
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:query_{i}", "expr": e}
                                                         for i, e in enumerate(exprs)]}]}
    (tmp_path / "dashboard.yml").write_text(yaml.safe_dump(rules))
    checked = run(promtool, "check", "rules", "dashboard.yml", cwd=tmp_path)
    assert checked.returncode == 0 and f"SUCCESS: {len(exprs)} rules found" in checked.stdout, \
        checked.stdout + checked.stderr
