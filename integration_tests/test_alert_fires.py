"""The shipped alerts fire on real faults and clear after the fix: a real Prometheus (Debian's
package) with docker/alerts.yml verbatim scrapes a real run's driver and `kafka-eos monitor`.
- make test: the driver frozen (SIGSTOP) while input arrives fires KafkaEosNoBatchCommitted from
  the monitor's lag, cleared once the resumed driver commits; the driver killed right after a
  batch's decision and kept down fires KafkaEosOutputHeldBack from the monitor, cleared once a
  restart commits the decided batch (seconds to fire and to clear printed).
- make chaos: the driver killed mid-run fires KafkaEosDriverDown after its `for: 1m`; the only
  broker (the source's leader) hung with input waiting fires KafkaEosNoBatchCommitted from the
  ends the monitor last read, cleared once the broker is resumed and the run commits; a verify
  that fails (another writer's record in the output) fires KafkaEosVerifyFailed from the monitor,
  cleared by a later verify run that passes.
Each restart then commits what the dead driver left and every order comes out exactly once."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from integration_tests import network_faults as faults
from integration_tests.debian_tools import ensure
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from integration_tests.providers import local_broker
from integration_tests.test_metrics import free_port
from integration_tests.test_status import ORDERS, pipeline_file, topics  # noqa: F401 - the fixture
from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from kafka_eos.connectors.dev.local_kafka import ClusterSettings

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
    prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, metrics_port), tmp_path,
                                  prometheus_port)
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


PIPELINE_LABEL = "orders-json"


def prometheus_config(tmp_path: Path, driver_port: int, monitor_port: int | None = None) -> Path:
    """A Prometheus config with the shipped rules, scraping (every second) the driver as job
    kafka-eos, labelled with its pipeline, and the monitor as job kafka-eos-monitor, as
    docker/prometheus.yml does."""
    jobs = [{"job_name": "kafka-eos", "honor_labels": True, "static_configs": [
        {"targets": [f"127.0.0.1:{driver_port}"], "labels": {"pipeline": PIPELINE_LABEL}}]}]
    if monitor_port is not None:
        jobs.append({"job_name": "kafka-eos-monitor", "honor_labels": True,
                     "static_configs": [{"targets": [f"127.0.0.1:{monitor_port}"]}]})
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                                      "rule_files": [str(ALERTS)], "scrape_configs": jobs}))
    return config


def start_prometheus(binary: str, config: Path, tmp_path: Path, port: int) -> subprocess.Popen:
    return subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def value(port: int, promql: str) -> float | None:
    """The value of a query with one result (None: no result)."""
    found = api(port, "query?" + urllib.parse.urlencode({"query": promql}))["result"]
    return float(found[0]["value"][1]) if found else None


def fires(port: int, name: str, since: float, bound_s: float) -> float:
    """Seconds from ``since`` until alert ``name`` is firing (pending first)."""
    wait_until(lambda: alert_state(port, name) in ("pending", "firing"), bound_s, f"{name} pending", 0.25)
    wait_until(lambda: alert_state(port, name) == "firing", bound_s, f"{name} firing", 0.25)
    return time.monotonic() - since


def cleared(port: int, name: str, since: float, bound_s: float) -> float:
    """Seconds from ``since`` until alert ``name`` is neither pending nor firing."""
    wait_until(lambda: alert_state(port, name) is None, bound_s, f"{name} cleared", 0.25)
    return time.monotonic() - since


def test_a_frozen_driver_and_a_driver_killed_after_its_decision_fire_from_the_monitor_and_clear(
        bootstrap, tmp_path, prometheus_binary):
    """The shipped rules in a real Prometheus scraping a real run and `kafka-eos monitor`:
    1. the driver frozen (SIGSTOP) with input arriving: KafkaEosNoBatchCommitted fires from the
       monitor's lag (the driver's endpoint is frozen too) within its budget + `for`, and clears
       once the resumed driver commits;
    2. the driver killed right after batch 2's decision and kept down: KafkaEosOutputHeldBack fires
       from the monitor's held-back output (no driver series left), and clears once a restart
       commits the decided batch. Every order comes out exactly once."""
    names = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {names[0]: 3, names[1]: 3})
    first = produce_orders(bootstrap, names[0], 300)
    faults = tmp_path / "faults"
    faults.mkdir()
    path = pipeline_file(tmp_path, names, {"faultInjection": "after_decision@2", "faultInjectionDir": str(faults)})
    doc = yaml.safe_load(path.read_text())
    driver_port, monitor_port, prometheus_port = free_port(), free_port(), free_port()
    doc["checkpoint"]["trigger"] = "1 second"
    doc["source"].pop("max_offsets_per_trigger")               # one batch for all that waits
    doc["sink"]["batch_margin_ms"] = 5000                      # the batch budget: 1 + 5 s
    doc["metrics"] = {"port": driver_port, "sample_interval_s": 1}
    path.write_text(yaml.safe_dump(doc))
    prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, driver_port, monitor_port),
                                  tmp_path, prometheus_port)
    monitor = start_kafka_eos(["monitor", str(path), "--port", str(monitor_port)], bootstrap, tmp_path,
                              tmp_path / "monitor.log")
    log = tmp_path / "run.log"
    run = start_kafka_eos(["run", str(path)], bootstrap, tmp_path, log)
    restart = None
    figures: dict[str, float] = {}
    behind = 'sum(max by (topic, partition) (kafka_eos_offsets_behind{exporter="monitor"}))'
    try:
        wait_until(lambda: value(prometheus_port, behind) == 0 and "orders-json batch 0:" in log.read_text(), 300,
                   "batch 0 committed and the monitor's lag 0")
        os.killpg(run.pid, signal.SIGSTOP)                     # 1. the driver frozen
        frozen = time.monotonic()
        second = produce_orders(bootstrap, names[0], 200)
        figures["stall fired"] = fires(prometheus_port, "KafkaEosNoBatchCommitted", frozen, 120)
        assert value(prometheus_port, behind) >= 200
        assert value(prometheus_port, 'count(kafka_eos_offsets_behind{exporter="driver"})') is None, "frozen"
        os.killpg(run.pid, signal.SIGCONT)
        resumed = time.monotonic()
        figures["stall cleared"] = cleared(prometheus_port, "KafkaEosNoBatchCommitted", resumed, 120)
        third = produce_orders(bootstrap, names[0], 200)      # 2. batch 2: killed after its decision
        wait_for((faults, "after_decision.*"), run, 300, log)
        kill_group(run)
        killed = time.monotonic()
        figures["held back fired"] = fires(prometheus_port, "KafkaEosOutputHeldBack", killed, 120)
        held = 'max(kafka_eos_output_held_back_seconds{exporter="monitor"})'
        assert value(prometheus_port, held) > 6
        assert value(prometheus_port, 'count(kafka_eos_output_held_back_seconds{exporter="driver"})') is None
        assert value(prometheus_port, 'max(kafka_eos_decided_uncommitted_transactions{exporter="monitor"})') >= 1
        restart = start_kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, tmp_path / "restart.log")
        restarted = time.monotonic()
        figures["held back cleared"] = cleared(prometheus_port, "KafkaEosOutputHeldBack", restarted, 300)
        assert restart.wait(300) == 0, tail(tmp_path / "restart.log")
    finally:
        for proc in (run, restart):
            if proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGCONT)
                kill_group(proc)
        monitor.send_signal(signal.SIGTERM)
        stopped = monitor.wait(30)
        prometheus.terminate()
        prometheus.wait(30)
    print(", ".join(f"{what} {seconds:.1f} s" for what, seconds in figures.items()))
    assert stopped == 128 + signal.SIGTERM and "kafka-eos monitor: stopped" in (tmp_path / "monitor.log").read_text()
    assert order_report(bootstrap, {first.run: 300, second.run: 200, third.run: 200}, names[1]) == \
        {"out": 700, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


@pytest.mark.chaos  # ~3 min with a broker of its own: `make chaos`
def test_a_hung_source_leader_fires_no_batch_committed_from_the_ends_last_read(tmp_path, prometheus_binary):
    """The only broker (every partition's leader) hung with SIGSTOP while input waits for the next
    trigger: nobody can read the source's ends, the monitor's lag probe answers from the ends it last
    read (and counts failures), and KafkaEosNoBatchCommitted fires; resumed, the run commits the
    waiting input and the alert clears. Every order comes out exactly once."""
    with local_broker(ClusterSettings(nodes=1)) as broker:
        names = (unique("orders"), unique("priced"))
        create_topics(broker.bootstrap, {names[0]: 3, names[1]: 3})
        first = produce_orders(broker.bootstrap, names[0], 300)
        path = pipeline_file(tmp_path, names)
        doc = yaml.safe_load(path.read_text())
        driver_port, monitor_port, prometheus_port = free_port(), free_port(), free_port()
        doc["checkpoint"]["trigger"] = "20 seconds"                # input waits for the next trigger
        doc["source"].pop("max_offsets_per_trigger")
        doc["sink"]["batch_margin_ms"] = 5000                      # the batch budget: 20 + 5 s
        doc["metrics"] = {"port": driver_port, "sample_interval_s": 1}
        path.write_text(yaml.safe_dump(doc))
        prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, driver_port, monitor_port),
                                      tmp_path, prometheus_port)
        monitor = start_kafka_eos(["monitor", str(path), "--port", str(monitor_port), "--timeout", "5"],
                                  broker.bootstrap, tmp_path, tmp_path / "monitor.log")
        log = tmp_path / "run.log"
        run = start_kafka_eos(["run", str(path)], broker.bootstrap, tmp_path, log)
        behind = 'sum(max by (topic, partition) (kafka_eos_offsets_behind{exporter="monitor"}))'
        figures: dict[str, float] = {}
        try:
            wait_until(lambda: value(prometheus_port, behind) == 0 and "orders-json batch 0:" in log.read_text(),
                       300, "batch 0 committed and the monitor's lag 0")
            second = produce_orders(broker.bootstrap, names[0], 200)
            wait_until(lambda: (value(prometheus_port, behind) or 0) >= 200, 30, "the monitor sees the input wait")
            with faults.hung(broker.cluster, broker.cluster.nodes[0].node_id):
                hung_at = time.monotonic()
                figures["stall fired"] = fires(prometheus_port, "KafkaEosNoBatchCommitted", hung_at, 150)
                failed = 'sum(kafka_eos_probe_failures_total{exporter="monitor",probe="lag"})'
                assert (value(prometheus_port, failed) or 0) >= 1, "the lag probe counted its failed reads"
            resumed = time.monotonic()
            figures["stall cleared"] = cleared(prometheus_port, "KafkaEosNoBatchCommitted", resumed, 180)
            stop = kafka_eos(["stop", str(path)], broker.bootstrap, tmp_path, timeout=120)
            assert stop.code == 0, stop.log()
            assert run.wait(180) == 0, tail(log)
        finally:
            kill_group(run)
            monitor.send_signal(signal.SIGTERM)
            monitor.wait(30)
            prometheus.terminate()
            prometheus.wait(30)
        print(", ".join(f"{what} {seconds:.1f} s" for what, seconds in figures.items()))
        assert order_report(broker.bootstrap, {first.run: 300, second.run: 200}, names[1]) == \
            {"out": 500, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


@pytest.mark.chaos  # three runs and three verifies (~2 min): `make chaos`; make test keeps the stall and held-back case
def test_a_verify_that_fails_fires_from_the_monitor_and_a_verify_that_passes_clears_it(
        bootstrap, tmp_path, prometheus_binary):
    """The shipped KafkaEosVerifyFailed in a real Prometheus scraping `kafka-eos monitor` (no driver
    running): a record another transactional producer committed into the output between two runs
    makes the next batch fail verify (exit 6); the alert fires from the monitor's reading of the
    recorded verify run, and clears once a later verify run of the batches after it passes."""
    from confluent_kafka import Producer

    from integration_tests.test_verify_recompute import verify
    names = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {names[0]: 3, names[1]: 3})
    path = pipeline_file(tmp_path, names)
    monitor_port, prometheus_port = free_port(), free_port()
    prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, free_port(), monitor_port),
                                  tmp_path, prometheus_port)
    monitor = start_kafka_eos(["monitor", str(path), "--port", str(monitor_port)], bootstrap, tmp_path,
                              tmp_path / "monitor.log")
    last_run = 'max(kafka_eos_verify_last_run_timestamp_seconds{exporter="monitor"})'
    figures: dict[str, float] = {}
    try:
        runs = [produce_orders(bootstrap, names[0], 600)]
        assert kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path).code == 0
        assert verify(str(path), bootstrap, tmp_path)[0] == 0
        wait_until(lambda: (value(prometheus_port, last_run) or 0) > 0, 120, "the monitor saw the verify run")
        assert alert_state(prometheus_port, "KafkaEosVerifyFailed") is None
        intruder = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("intruder")})
        intruder.init_transactions(30)
        intruder.begin_transaction()
        intruder.produce(names[1], b'{"order_id": "intruder-0"}', b"not-ours", partition=1)
        intruder.commit_transaction(30)
        runs.append(produce_orders(bootstrap, names[0], 600))
        assert kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path).code == 0
        code, report = verify(str(path), bootstrap, tmp_path)
        failed = [b["batch"] for b in report["per_batch"] if b["outcome"] == "failed"]
        assert code == 6 and len(failed) == 1, report
        verified = time.monotonic()
        figures["verify failed fired"] = fires(prometheus_port, "KafkaEosVerifyFailed", verified, 120)
        assert value(prometheus_port, 'max(kafka_eos_verify_last_run_failed_batches{exporter="monitor"})') == 1
        runs.append(produce_orders(bootstrap, names[0], 600))
        assert kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path).code == 0
        code, report = verify(str(path), bootstrap, tmp_path, "--batches", f"{failed[0] + 1}..")
        assert code == 0 and report["per_batch"], report
        passed = time.monotonic()
        figures["verify failed cleared"] = cleared(prometheus_port, "KafkaEosVerifyFailed", passed, 120)
    finally:
        monitor.send_signal(signal.SIGTERM)
        monitor.wait(30)
        prometheus.terminate()
        prometheus.wait(30)
    print(", ".join(f"{what} {seconds:.1f} s" for what, seconds in figures.items()))
    assert order_report(bootstrap, {run.run: 600 for run in runs}, names[1])["duplicates"] == 0
