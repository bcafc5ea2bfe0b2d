"""The shipped alert rules and dashboard speak the endpoint's metric names (``METRICS``), link
runbook sections that exist, take whichever exporter answers (driver or monitor), and are wired
into the compose file's Prometheus with the monitor beside the job. (promtool's own checks and
rule tests run in integration_tests/pipeline/test_alert_rules.py; the alerts fire on real faults in
integration_tests/pipeline/test_alert_fires.py.)"""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from kafka_eos.connectors.operate.metric_table import SETTINGS
from kafka_eos.connectors.operate.metrics import METRICS
from kafka_eos.connectors.operate.monitor import DEFAULT_PORT
from tests.test_runbooks import anchor, headings

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


def test_every_alert_has_a_severity_a_summary_and_a_runbook_section_that_exists():
    sections = headings()
    for rule in alert_rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        page, _, anchor = rule["annotations"]["runbook"].partition("#")
        assert page == "docs/runbooks.md" and anchor in sections, (rule["alert"], rule["annotations"]["runbook"])


def test_each_alerts_runbook_section_names_the_alert():
    text = (ROOT / "docs" / "runbooks.md").read_text()
    bodies = {anchor(h): body for h, body in re.findall(r"^## (.+)\n((?:(?!^## ).*\n?)*)", text, re.M)}
    for rule in alert_rules():
        section = rule["annotations"]["runbook"].partition("#")[2]
        assert rule["alert"] in bodies[section], f"{rule['alert']}: section #{section} does not mention it"


# where both the driver and the monitor export a series: an alert takes one answer per pipeline
TAKES_ONE = re.compile(r"(?:max by \([a-z, ]+\) \(|max\(|increase\(|rate\()$")


def test_alerts_and_panels_take_whichever_exporter_answers():
    both = {m.name for m in METRICS if "exporter" in m.labels}
    exprs = [rule["expr"] for rule in alert_rules()] + dashboard_exprs()
    for expr in exprs:
        for found in re.finditer(r"\bkafka_eos_[a-z_]+\b", expr):
            if found.group() in both:
                assert TAKES_ONE.search(expr[:found.start()]), f"{found.group()} not aggregated over exporters: {expr}"


def test_every_panel_follows_the_pipeline_variable_and_the_variable_survives_a_dead_driver():
    for expr in dashboard_exprs():
        assert "$pipeline" in expr or expr == 'up{job="kafka-eos-monitor"}', expr
    dashboard = json.loads((DOCKER / "grafana-dashboard.json").read_text())
    [variable] = [v for v in dashboard["templating"]["list"] if v["name"] == "pipeline"]
    [name] = names_in(variable["definition"])
    assert [m.source for m in METRICS if m.name == name] == [SETTINGS], "exported by the driver and the monitor"


def test_the_alerts_up_jobs_are_the_scrape_jobs_and_each_driver_target_names_its_pipeline():
    config = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    jobs = {c["job_name"]: c for c in config["scrape_configs"]}
    alerted = set(re.findall(r'up\{job="([\w-]+)"', " ".join(rule["expr"] for rule in alert_rules())))
    assert alerted == set(jobs) == {"kafka-eos", "kafka-eos-monitor"}
    assert all(c.get("honor_labels") for c in jobs.values()), "the exported pipeline label is kept"
    assert all("pipeline" in group.get("labels", {}) for group in jobs["kafka-eos"]["static_configs"])


def test_no_metric_says_kafka_eos_fences_nothing():
    """The runbooks name the fencing a reused transactional id causes; the metric reference agrees."""
    assert not [m.name for m in METRICS if "fences no producer" in m.meaning]


def test_compose_prometheus_loads_the_alerts_and_the_job_restarts_on_failure():
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    config = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    mounts = {v.split(":")[1]: v.split(":")[0] for v in compose["prometheus"]["volumes"]}
    for name in config["rule_files"]:
        assert mounts.get(f"/etc/prometheus/{name}") == f"./{name}" and (DOCKER / name).exists(), name
    assert compose["job"]["restart"] == "on-failure"


def test_compose_runs_the_monitor_on_the_jobs_pipeline_and_checkpoints_and_prometheus_scrapes_it():
    from kafka_eos.connectors.cli import build_parser
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    job, monitor = compose["job"], compose["monitor"]
    command = monitor["command"]
    assert command[:2] == ["kafka-eos", "monitor"] and command[2] in job["command"][0], "the job's pipeline file"
    assert command[command.index("--host") + 1] == "0.0.0.0" and monitor["restart"] == "on-failure"
    port = command[command.index("--port") + 1]
    assert int(port) == DEFAULT_PORT == build_parser().parse_args(["monitor", "p.yaml"]).port
    assert monitor["environment"] == {k: job["environment"][k] for k in monitor["environment"]}
    checkpoints = job["environment"]["KAFKA_EOS_CHECKPOINTS"]
    assert any(v.endswith(f":{checkpoints}") for v in monitor["volumes"]), "it reads the checkpoints the job writes"
    assert "spark-master" not in monitor.get("depends_on", []), "the monitor needs no Spark"
    config = yaml.safe_load((DOCKER / "prometheus.yml").read_text())
    [scrape] = [c for c in config["scrape_configs"] if c["job_name"] == "kafka-eos-monitor"]
    assert [t for g in scrape["static_configs"] for t in g["targets"]] == [f"monitor:{port}"]
    assert "monitor" in compose["prometheus"]["depends_on"]
