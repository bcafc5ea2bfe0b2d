"""The shipped alert rules and dashboard speak the endpoint's metric names (``METRICS``), link
runbook sections that exist, and are wired into the compose file's Prometheus. (promtool's own
checks and rule tests run in integration_tests/test_alert_rules.py.)"""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from kafka_eos.connectors.operate.metrics import METRICS
from tests.test_runbooks import headings

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


def names_in(text: str) -> set[str]:
    return set(re.findall(r"\bkafka_eos_[a-z_]+\b", text))


def known(name: str) -> bool:
    names = {m.name for m in METRICS}
    histograms = {m.name for m in METRICS if m.kind == "histogram"}
    return name in names or any(name.removesuffix(s) in histograms for s in HISTOGRAM_SUFFIXES if name.endswith(s))


def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load((DOCKER / "alerts.yml").read_text())["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    panels = json.loads((DOCKER / "grafana-dashboard.json").read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def test_alerts_and_dashboard_use_only_metrics_the_endpoint_exports():
    alerts = " ".join(rule["expr"] for rule in alert_rules())
    used = names_in(alerts) | names_in(" ".join(dashboard_exprs()))
    assert used and not [n for n in sorted(used) if not known(n)], sorted(n for n in used if not known(n))


def test_the_operator_metrics_are_on_the_dashboard():
    shown = names_in(" ".join(dashboard_exprs()))
    for name in ("kafka_eos_output_held_back_seconds", "kafka_eos_open_transactions",
                 "kafka_eos_oldest_open_transaction_seconds", "kafka_eos_decision_state"):
        assert name in shown, name


def test_every_alert_has_a_severity_a_summary_and_an_existing_runbook():
    sections = headings()
    for rule in alert_rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        runbook = rule["annotations"].get("runbook")
        if runbook:
            page, _, anchor = runbook.partition("#")
            assert page == "docs/runbooks.md" and (not anchor or anchor in sections), (rule["alert"], runbook)


def test_compose_prometheus_loads_the_alerts_and_the_job_restarts_on_failure():
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    config = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    mounts = {v.split(":")[1]: v.split(":")[0] for v in compose["prometheus"]["volumes"]}
    for name in config["rule_files"]:
        assert mounts.get(f"/etc/prometheus/{name}") == f"./{name}" and (DOCKER / name).exists(), name
    assert compose["job"]["restart"] == "on-failure"
