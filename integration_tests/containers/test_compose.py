"""docker/compose.yaml as shipped, run by podman-compose (or ``KAFKA_EOS_COMPOSE_CLI``, e.g.
``docker compose`` against the engine's Docker API) on images built here (the file's image
variables name them): the broker, the Spark master and worker, the job running the orders-json
example and Prometheus come up; orders produced through the published port come out exactly once
(counted by order id) with the poison records in the DLQ; the driver's /metrics answers with the
pipeline's counters and Prometheus scraped the same values. Everything is torn down (`down -v`).

Not in `make test`: `make compose` runs it (see the Makefile for why)."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from integration_tests.broker_containers import engine_unavailable_reason
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, create_topic, read_all, unique
from kafka_eos.connectors.demo_data import produce_orders
from kafka_eos.connectors.dev.local_kafka import free_port
from tests.test_ops_files import dashboard_exprs

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker" / "compose.yaml"
BUILD = REPO / "docker" / "images" / "build.py"
IMAGES = {"KAFKA_IMAGE": "broker", "JOB_IMAGE": "job", "PROMETHEUS_IMAGE": "prometheus"}
ORDERS, POISON = 3000, 5
PIPELINE = 'pipeline="orders-json"'


def compose_cli() -> list[str] | None:
    """``KAFKA_EOS_COMPOSE_CLI`` (e.g. ``docker compose``, against the engine's Docker API), else
    podman-compose (beside this Python, or on PATH)."""
    if os.environ.get("KAFKA_EOS_COMPOSE_CLI"):
        return shlex.split(os.environ["KAFKA_EOS_COMPOSE_CLI"])
    beside_python = Path(sys.executable).parent / "podman-compose"
    found = str(beside_python) if beside_python.exists() else shutil.which("podman-compose")
    return [found] if found else None


def leftovers(project: str) -> list[str]:
    """Containers and volumes of ``project`` (podman-compose's or Docker compose's label)."""
    found = []
    for label in ("io.podman.compose.project", "com.docker.compose.project"):
        for kind in (["ps", "-a"], ["volume", "ls"]):
            found += subprocess.run(["podman", *kind, "-q", "--filter", f"label={label}={project}"],
                                    capture_output=True, text=True).stdout.split()
    return found


def build(target: str) -> str:
    proc = subprocess.run([sys.executable, str(BUILD), target], capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    assert proc.returncode == 0, f"docker/images/build.py {target} failed:\n{proc.stderr[-2000:]}"
    return proc.stdout.strip().splitlines()[-1]


@dataclass
class Stack:
    cli: list[str]
    env: dict[str, str]
    bootstrap: str
    prometheus: str
    project: str

    def compose(self, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([*self.cli, *args], capture_output=True, text=True, env=self.env, timeout=timeout_s)

    def logs(self, service: str, lines: int = 60) -> str:
        out = self.compose("logs", "--tail", str(lines), service, timeout_s=60)
        return f"--- {service} (last {lines} lines) ---\n{out.stdout}{out.stderr}"

    def metrics(self) -> dict[str, float]:
        """The driver's /metrics, read inside the job container (it binds loopback)."""
        fetch = ("import urllib.request; "
                 "print(urllib.request.urlopen('http://127.0.0.1:9464/metrics', timeout=10).read().decode())")
        out = self.compose("exec", "-T", "job", "python3", "-I", "-c", fetch, timeout_s=60)
        assert out.returncode == 0, f"/metrics did not answer: {out.stderr}\n{self.logs('job')}"
        return parse_metrics(out.stdout)

    def container(self, service: str) -> str:
        """The id of ``service``'s container (podman-compose's or Docker compose's labels)."""
        for prefix in ("io.podman.compose", "com.docker.compose"):
            found = subprocess.run(["podman", "ps", "-aq", "--filter", f"label={prefix}.project={self.project}",
                                    "--filter", f"label={prefix}.service={service}"],
                                   capture_output=True, text=True).stdout.split()
            if found:
                return found[0]
        raise AssertionError(f"no container of service {service} in project {self.project}")

    def alert_state(self, name: str) -> str | None:
        with urllib.request.urlopen(f"{self.prometheus}/api/v1/alerts", timeout=10) as response:
            alerts = json.loads(response.read())["data"]["alerts"]
        return next((a["state"] for a in alerts if a["labels"]["alertname"] == name), None)

    def query(self, promql: str) -> float | None:
        url = f"{self.prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as response:
            result = json.loads(response.read())["data"]["result"]
        return float(result[0]["value"][1]) if result else None


def parse_metrics(text: str) -> dict[str, float]:
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


@pytest.fixture
def stack() -> Iterator[Stack]:
    reason = engine_unavailable_reason()
    cli = compose_cli()
    if reason or not cli or not shutil.which("podman"):
        pytest.skip(reason or "podman-compose and podman are needed (pip install podman-compose; docker/engine.sh)")
    images = {variable: build(target) for variable, target in IMAGES.items()}
    ports = {name: str(free_port()) for name in ("KAFKA_PORT", "SPARK_UI_PORT", "PROMETHEUS_PORT")}
    project = unique("kafka-eos-compose")
    env = {**os.environ, **images, **ports}
    stack = Stack([*cli, "-p", project, "-f", str(COMPOSE_FILE)], env,
                  f"127.0.0.1:{ports['KAFKA_PORT']}", f"http://127.0.0.1:{ports['PROMETHEUS_PORT']}", project)
    try:
        up = stack.compose("up", "-d")
        assert up.returncode == 0, f"compose up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
        yield stack
    finally:
        down = stack.compose("down", "-v")
        left = leftovers(project)
        assert down.returncode == 0 and not left, f"down -v left {left}: {down.stderr[-2000:]}"


def wait_for(what: str, check, timeout_s: float, describe=lambda: ""):  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}\n{describe()}")
        time.sleep(3)


def topics_created(bootstrap: str) -> bool:
    from confluent_kafka.admin import AdminClient
    try:
        listed = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=5).topics
    except Exception:  # noqa: BLE001 - the broker is still starting
        return False
    return {"orders", "orders-priced", "orders-dlq"} <= set(listed)


def order_id(message) -> str:
    return json.loads(message.value())["order_id"]


def wait_for_orders(stack: Stack, expected: set[str], describe) -> None:  # noqa: ANN001
    def output():
        report = check_exactly_once(stack.bootstrap, "orders-priced", expected=expected, id_of=order_id)
        return report if report.records >= len(expected) else None
    assert_exactly_once(wait_for(f"{len(expected)} orders in orders-priced", output, 900, describe))


def takes_writes(bootstrap: str, topic: str) -> bool:
    """One record delivered to ``topic`` within 10 s (a broker unpaused after its session timeout
    is fenced by its own controller until it registers again: its partitions have no leader)."""
    from confluent_kafka import Producer
    delivered: list[bool] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10_000, "log_level": 0})
    producer.produce(topic, b"probe", on_delivery=lambda err, _msg: delivered.append(err is None))
    producer.flush(15)
    return delivered == [True]


def test_compose_runs_the_example_exactly_once_with_metrics_prometheus_and_its_alerts(stack):
    jobs = lambda: stack.logs("job") + stack.logs("kafka", 20)  # noqa: E731
    wait_for("the job to create the topics", lambda: topics_created(stack.bootstrap), 420, jobs)
    data = produce_orders(stack.bootstrap, "orders", ORDERS, poison=POISON, aborted_every=1000, aborted_size=50)
    expected = {f"{data.run}-{i}" for i in range(ORDERS)}
    wait_for_orders(stack, expected, jobs)
    dlq = [m.key().decode() for m in read_all(stack.bootstrap, "orders-dlq")]
    assert sorted(dlq) == sorted(f"{data.run}-poison-{n}" for n in range(POISON)), dlq

    metrics = stack.metrics()
    assert metrics[f"kafka_eos_records_read_total{{{PIPELINE}}}"] == ORDERS + POISON, metrics
    assert metrics[f"kafka_eos_records_written_total{{{PIPELINE}}}"] >= ORDERS, metrics
    assert metrics[f"kafka_eos_batch_duration_seconds_count{{{PIPELINE}}}"] >= 1, metrics

    assert wait_for("Prometheus to scrape the job", lambda: stack.query('up{job="kafka-eos"}'), 90,
                    lambda: stack.logs("prometheus")) == 1
    scraped = wait_for("Prometheus to hold the final count",
                       lambda: stack.query(f"kafka_eos_records_read_total{{{PIPELINE}}}") == ORDERS + POISON, 90,
                       lambda: stack.logs("prometheus"))
    assert scraped
    # every panel of the shipped dashboard has data in the compose file's Prometheus
    def without_data() -> list[str]:
        return [expr for expr in dashboard_exprs() if stack.query(expr.replace("$pipeline", ".*")) is None]
    wait_for("every dashboard panel to have data (a rate needs two scrapes)", lambda: not without_data(), 90,
             lambda: f"without data: {without_data()}")

    # The driver killed: the restart policy starts the job again, and the same Prometheus scrapes
    # the new driver (one in the old job's network namespace saw it down for good).
    started = stack.query(f"kafka_eos_run_start_timestamp_seconds{{{PIPELINE}}}")
    kill = stack.compose("exec", "-T", "job", "pkill", "-KILL", "-f", "org.apache.spark.deploy.SparkSubmit",
                         timeout_s=60)
    assert kill.returncode == 0, f"no driver to kill: {kill.stderr}\n{jobs()}"
    restarted = lambda: (stack.query(f"kafka_eos_run_start_timestamp_seconds{{{PIPELINE}}}") or 0) > started  # noqa: E731
    wait_for("Prometheus to scrape the restarted driver", restarted, 420, lambda: stack.logs("prometheus") + jobs())
    more = produce_orders(stack.bootstrap, "orders", 1000)
    expected |= {f"{more.run}-{i}" for i in range(1000)}
    wait_for_orders(stack, expected, jobs)

    # The broker hung (its container paused): the shipped alert KafkaEosProbeFailing fires in the
    # compose file's Prometheus; after the unpause the run goes on (no further restart), exactly once.
    create_topic(stack.bootstrap, "compose-probe")
    kafka = stack.container("kafka")
    assert subprocess.run(["podman", "pause", kafka], capture_output=True).returncode == 0
    try:
        # 3 failed samples (15 s apart, 10 s each), a scrape and an evaluation (15 s each): well inside the
        # source's 120 s lookup deadline, which a longer hang of the only broker would end the query at
        wait_for("KafkaEosProbeFailing to fire", lambda: stack.alert_state("KafkaEosProbeFailing") == "firing", 105,
                 lambda: stack.logs("prometheus") + jobs())
    finally:
        subprocess.run(["podman", "unpause", kafka], capture_output=True)
    wait_for("the broker to take writes again", lambda: takes_writes(stack.bootstrap, "compose-probe"), 300, jobs)
    last = produce_orders(stack.bootstrap, "orders", 1000)
    expected |= {f"{last.run}-{i}" for i in range(1000)}
    wait_for_orders(stack, expected, jobs)
    runs = stack.query(f"changes(kafka_eos_run_start_timestamp_seconds{{{PIPELINE}}}[1h])")
    restarts = subprocess.run(["podman", "inspect", "--format", "{{.RestartCount}}", stack.container("job")],
                              capture_output=True, text=True).stdout.strip()
    assert (runs, restarts) == (1, "1"), f"one restart (the kill) expected, Prometheus saw {runs}, podman {restarts}"
