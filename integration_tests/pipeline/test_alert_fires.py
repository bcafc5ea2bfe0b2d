"""The shipped alerts fire on real faults and clear after the fix: a real Prometheus (Debian's
package) with docker/alerts.yml verbatim scrapes a real run's driver and `kafka-eos monitor`, every
pipeline at its default settings (sink.batch_margin_ms, metrics.sample_interval_s) but its trigger.
- make test: a pipeline with `trigger: 2 seconds` and input arriving at 100 records/s, scraped
  and evaluated every 2 s as in issue 64. Its driver frozen (SIGSTOP): KafkaEosNoBatchCommitted
  fires from the monitor within 60 s of the freeze and `kafka-eos status` exits 1 within 60 s;
  resumed (SIGCONT), the alert clears within 30 s. Its driver killed (SIGKILL) and kept down: the
  alert fires within 60 s and status exits 1 within 60 s. The restart commits what waited;
  every order comes out exactly once. The seconds to fire, to clear and to status' exit 1 are printed.
- make chaos: a 30 s broker failover (one of three brokers killed, then restarted) under the same
  pipeline: batches keep committing and no alert of the pipeline's fires; a backlog of 300,000
  orders or more committed at once makes one batch of the same pipeline far longer than its usual ones
  (its planned size raises the stall threshold): nothing fires; the driver killed mid-run
  fires KafkaEosDriverDown after its `for: 1m`; the driver killed right after a batch's decision
  fires KafkaEosOutputHeldBack from the monitor, cleared once a restart commits the decided batch;
  the only broker (the source's leader) hung with input waiting fires KafkaEosNoBatchCommitted
  from the ends the monitor last read, cleared once the broker is resumed and the run commits; a
  verify that fails (another writer's record in the output) fires KafkaEosVerifyFailed from the
  monitor, cleared by a later verify run that passes.
Each restart then commits what the dead driver left and every order comes out exactly once."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from integration_tests import network_faults as faults
from integration_tests.debian_tools import ensure
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from integration_tests.providers import local_broker
from integration_tests.pipeline.test_metrics import free_port
from integration_tests.pipeline.test_status import ORDERS, pipeline_file, topics  # noqa: F401 - the fixture
from kafka_eos.connectors.demo_data import create_topics, order, order_report, produce_orders
from kafka_eos.connectors.dev.local_kafka import ClusterSettings

ALERTS = Path(__file__).resolve().parents[2] / "docker" / "alerts.yml"


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


def prometheus_config(tmp_path: Path, driver_port: int, monitor_port: int | None = None, every: str = "1s") -> Path:
    """A Prometheus config with the shipped rules, scraping (and evaluating) ``every`` the driver as
    job kafka-eos, labelled with its pipeline, and the monitor as job kafka-eos-monitor, as
    docker/prometheus.yml does."""
    jobs = [{"job_name": "kafka-eos", "honor_labels": True, "static_configs": [
        {"targets": [f"127.0.0.1:{driver_port}"], "labels": {"pipeline": PIPELINE_LABEL}}]}]
    if monitor_port is not None:
        jobs.append({"job_name": "kafka-eos-monitor", "honor_labels": True,
                     "static_configs": [{"targets": [f"127.0.0.1:{monitor_port}"]}]})
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": every, "evaluation_interval": every},
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


class OrderFeeder(threading.Thread):
    """Orders of one run at ``per_second`` records a second (idempotent, acks=all) until stopped;
    ``sent`` counts those the brokers acknowledged."""

    def __init__(self, bootstrap: str, topic: str, per_second: int = 100) -> None:
        from confluent_kafka import Producer
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "message.timeout.ms": 300_000, "linger.ms": 20})
        self.topic, self.per_second, self.run_id = topic, per_second, unique("feed")
        self.next, self.failed = 0, []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            for _ in range(self.per_second // 10):
                key, record = order(self.run_id, self.next)
                self.producer.produce(self.topic, key=key, value=record, on_delivery=self._delivered)
                self.next += 1
            self.producer.poll(0)
            self.stopping.wait(0.1)

    def _delivered(self, err, _msg) -> None:
        if err is not None:
            self.failed.append(str(err))

    def stop(self) -> dict[str, int]:
        """Stops feeding; the run's orders, every one delivered."""
        self.stopping.set()
        self.join(30)
        assert self.producer.flush(300) == 0 and not self.failed, self.failed[:3]
        return {self.run_id: self.next}


def default_pipeline(tmp_path: Path, names: tuple[str, str], driver_port: int) -> Path:
    """orders-json at its defaults (no max_offsets_per_trigger, the default sink.batch_margin_ms and
    metrics.sample_interval_s) but `trigger: 2 seconds`, its driver's metrics on ``driver_port``."""
    path = pipeline_file(tmp_path, names)
    doc = yaml.safe_load(path.read_text())
    doc["checkpoint"]["trigger"] = "2 seconds"
    doc["source"].pop("max_offsets_per_trigger")
    assert "batch_margin_ms" not in doc["sink"]
    doc["metrics"] = {"port": driver_port}
    path.write_text(yaml.safe_dump(doc))
    return path


def status_needs_attention(path: Path, bootstrap: str, tmp_path: Path, since: float, bound_s: float) -> tuple[float, str]:
    """(seconds from ``since`` until `kafka-eos status` exits 1 saying input waits, its text)."""
    deadline = since + bound_s
    while True:
        done = kafka_eos(["status", str(path)], bootstrap, tmp_path, timeout=120)
        if done.code == 1 and "no batch committed while input waits" in done.stdout:
            return time.monotonic() - since, done.stdout
        assert done.code in (0, 1) and time.monotonic() < deadline, \
            f"status did not exit 1 within {bound_s} s:\n{done.log()}"
        time.sleep(1)


def committed_batches(path: Path) -> int:
    """Batches the pipeline's checkpoint (``${KAFKA_EOS_CHECKPOINTS}/orders-json``, the test's
    directory) has committed."""
    return len([p for p in (path.parent / "orders-json" / "commits").glob("[0-9]*") if p.name.isdigit()])


@dataclasses.dataclass
class Rig:
    """Issue 64's pipeline running beside its monitor and a Prometheus (``issue_64_rig``)."""
    names: tuple[str, str]
    path: Path
    prometheus_port: int
    monitor_port: int
    feeder: "OrderFeeder"
    run: subprocess.Popen
    log: Path
    monitor_exit: int | None = None


@contextlib.contextmanager
def issue_64_rig(bootstrap: str, tmp_path: Path, prometheus_binary: str) -> Iterator[Rig]:
    """Issue 64's pipeline (defaults but `trigger: 2 seconds`) run by `kafka-eos run`, its monitor,
    a Prometheus scraping both and evaluating the shipped rules every 2 s, orders arriving at 100/s;
    yielded once 5 batches are committed and the monitor has seen a commit. Ended: the feeder, the
    run (resumed first if frozen), the monitor (SIGTERM; its exit code in ``monitor_exit``), Prometheus."""
    names = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {names[0]: 3, names[1]: 3})
    driver_port, monitor_port, prometheus_port = free_port(), free_port(), free_port()
    path = default_pipeline(tmp_path, names, driver_port)
    prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, driver_port, monitor_port, "2s"),
                                  tmp_path, prometheus_port)
    monitor = start_kafka_eos(["monitor", str(path), "--port", str(monitor_port)], bootstrap, tmp_path,
                              tmp_path / "monitor.log")
    feeder = OrderFeeder(bootstrap, names[0])
    feeder.start()
    log = tmp_path / "run.log"
    rig = Rig(names, path, prometheus_port, monitor_port, feeder,
              start_kafka_eos(["run", str(path)], bootstrap, tmp_path, log), log)
    try:
        wait_until(lambda: committed_batches(path) >= 5, 300, "5 batches committed")
        wait_until(lambda: value(prometheus_port, 'max(kafka_eos_last_commit_timestamp_seconds{exporter="monitor"})')
                   and value(prometheus_port, 'up{job="kafka-eos"}') == 1, 60, "the monitor saw a commit")
        yield rig
    finally:
        feeder.stopping.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(rig.run.pid, signal.SIGCONT)
        kill_group(rig.run)
        monitor.send_signal(signal.SIGTERM)
        rig.monitor_exit = monitor.wait(30)
        prometheus.terminate()
        prometheus.wait(30)


@pytest.mark.long  # minutes: make long (CI, after make test)
def test_a_frozen_and_a_dead_driver_page_within_a_minute_at_defaults_and_status_needs_attention(
        bootstrap, tmp_path, prometheus_binary):
    """Issue 64's run: defaults but `trigger: 2 seconds`, 100 records/s, scrape and evaluation every
    2 s, the shipped rules verbatim.
    1. the driver's process group frozen (SIGSTOP): KafkaEosNoBatchCommitted fires within 60 s
       (from the monitor: the driver's endpoint is frozen too) and `kafka-eos status` exits 1
       within 60 s, saying input waits and the driver does not answer; resumed (SIGCONT), the alert
       clears within 30 s;
    2. the driver killed (SIGKILL) and kept down: the alert fires within 60 s and status exits 1
       within 60 s;
    3. restarted, it commits what waited: every order exactly once. (A long healthy batch that
       pages nothing: ``test_a_long_healthy_backlog_batch_pages_nothing``, make chaos.)"""
    status_checks = ThreadPoolExecutor(1)
    figures: dict[str, float] = {}
    threshold = 'max(kafka_eos_stall_threshold_seconds{exporter="monitor"})'
    with issue_64_rig(bootstrap, tmp_path, prometheus_binary) as rig:
        path, prometheus_port, run = rig.path, rig.prometheus_port, rig.run
        try:
            assert alert_state(prometheus_port, "KafkaEosNoBatchCommitted") is None
            os.killpg(run.pid, signal.SIGSTOP)                     # 1. the driver frozen
            frozen = time.monotonic()
            checked: Future = status_checks.submit(status_needs_attention, path, bootstrap, tmp_path, frozen, 60)
            figures["frozen: NoBatchCommitted fired"] = fires(prometheus_port, "KafkaEosNoBatchCommitted", frozen, 60)
            figures["frozen: status exit 1"], text = checked.result(90)
            print(text)
            assert "does not answer" in text, text
            figures["stall threshold"] = value(prometheus_port, threshold) or 0.0
            assert figures["stall threshold"] == pytest.approx(32.0, abs=1.0), "2 s + the 30 s floor"
            assert value(prometheus_port, 'count(kafka_eos_offsets_behind{exporter="driver"})') is None, "frozen"
            os.killpg(run.pid, signal.SIGCONT)
            resumed = time.monotonic()
            figures["frozen: cleared after SIGCONT"] = cleared(prometheus_port, "KafkaEosNoBatchCommitted", resumed, 30)
            before = committed_batches(path)
            wait_until(lambda: committed_batches(path) >= before + 3, 60, "3 more batches")
            kill_group(run)                                        # 2. the driver killed and kept down
            killed = time.monotonic()
            checked = status_checks.submit(status_needs_attention, path, bootstrap, tmp_path, killed, 60)
            figures["killed: NoBatchCommitted fired"] = fires(prometheus_port, "KafkaEosNoBatchCommitted", killed, 60)
            figures["killed: status exit 1"], text = checked.result(90)
            print(text)
            sent = rig.feeder.stop()
        finally:
            status_checks.shutdown(wait=True, cancel_futures=True)
    print(", ".join(f"{what} {seconds:.1f} s" for what, seconds in figures.items()))
    assert rig.monitor_exit == 128 + signal.SIGTERM and "kafka-eos monitor: stopped" in \
        (tmp_path / "monitor.log").read_text()
    again = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)    # 3. restarted: commits what waited
    assert again.code == 0, again.log() + tail(rig.log)
    orders = sum(sent.values())
    assert order_report(bootstrap, sent, rig.names[1]) == \
        {"out": orders, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


@pytest.mark.chaos  # ~3 min: `make chaos`; make test keeps the frozen and dead driver at defaults
def test_a_long_healthy_backlog_batch_pages_nothing(bootstrap, tmp_path, prometheus_binary):
    """Issue 64's pipeline (defaults but `trigger: 2 seconds`, 100 records/s, scraped and evaluated
    every 2 s, the shipped rules verbatim) running its usual batches; then a backlog committed at
    once makes one batch far longer than they are: nothing is raised (``long_batch_pages_nothing``).
    Every order exactly once after `kafka-eos stop`."""
    with issue_64_rig(bootstrap, tmp_path, prometheus_binary) as rig:
        sent = rig.feeder.stop()
        figures = long_batch_pages_nothing(rig.path, bootstrap, rig.names[0], rig.prometheus_port, rig.log, sent)
        stop = kafka_eos(["stop", str(rig.path)], bootstrap, tmp_path, timeout=120)
        assert stop.code == 0 and rig.run.wait(180) == 0, stop.log() + tail(rig.log)
    print(", ".join(f"{what} {seconds:.1f} s" for what, seconds in figures.items()))
    assert order_report(bootstrap, sent, rig.names[1]) == \
        {"out": sum(sent.values()), "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


BACKLOG = 300_000


def long_batch_pages_nothing(path: Path, bootstrap: str, topic: str, prometheus_port: int, log: Path,
                             sent: dict[str, int]) -> dict[str, float]:
    """A backlog of ``BACKLOG`` orders committed at once (one transaction): the running pipeline
    reads it in one batch, far longer than its usual ones. Until the backlog has waited, from its
    commit to the batch's, longer than the stall threshold the usual batches give (32 s), the
    next backlog is twice as large (at most three). Its planned size raises the threshold, so
    KafkaEosNoBatchCommitted is raised neither while such a batch runs nor after. Adds the runs to
    ``sent``; returns the last batch's duration, the longest input wait and the threshold meanwhile."""
    raised: dict[str, str] = {}
    for orders in (BACKLOG, 2 * BACKLOG, 4 * BACKLOG):
        before, seen = committed_batches(path), len(big_batches_ms(log))
        backlog = produce_orders(bootstrap, topic, orders, aborted_every=orders, aborted_size=1)
        sent[backlog.run] = orders
        produced = time.monotonic()
        while not (committed_batches(path) > before and len(big_batches_ms(log)) > seen):
            raised.update(alerts_raised(prometheus_port))
            assert time.monotonic() - produced < 900, f"the backlog of {orders} did not commit within 900 s"
            time.sleep(0.5)
        waited = time.monotonic() - produced
        for _ in range(10):                      # the next samples and evaluations after its commit
            raised.update(alerts_raised(prometheus_port))
            time.sleep(1)
        since = f"[{int(time.monotonic() - produced) + 2}s]"
        figures = {"backlog orders": float(orders), "backlog batch": big_batches_ms(log)[-1] / 1000,
                   "backlog produced to committed": waited,
                   "input waited during it": value(prometheus_port, 'max(max_over_time(kafka_eos_input_waiting_seconds'
                                                   '{exporter="monitor"}' + since + '))') or 0.0,
                   "stall threshold during it": value(prometheus_port, 'max(max_over_time('
                                                      'kafka_eos_stall_threshold_seconds{exporter="monitor"}' + since +
                                                      '))') or 0.0}
        print(figures)
        assert "KafkaEosNoBatchCommitted" not in raised and "KafkaEosOutputHeldBack" not in raised, (raised, figures)
        if waited > 34:
            return figures
    raise AssertionError(f"no backlog waited past the usual threshold (32 s): {figures}")


def big_batches_ms(log: Path) -> list[float]:
    """The durations of the run's batches that read more than ``BACKLOG`` / 2 records."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("kafka-eos orders-json batch ") and " in, " in line:
            read = int(line.split(": ", 1)[1].split(" in,")[0])
            if read > BACKLOG // 2:
                found.append(float(line.split(" batch ")[2].split(" ms")[0]))
    return found


def alerts_raised(port: int) -> dict[str, str]:
    """Every alert pending or firing now: name -> state."""
    return {a["labels"]["alertname"]: a["state"] for a in api(port, "alerts")["alerts"]}


@pytest.mark.chaos  # ~5 min with three brokers of its own: `make chaos`
def test_a_30_s_broker_failover_with_batches_committing_pages_nothing(tmp_path, prometheus_binary):
    """Issue 64's pipeline (defaults but `trigger: 2 seconds`, 100 records/s, scraped and evaluated
    every 2 s) on three brokers (replication 3): one broker killed (SIGKILL), kept down 30 s and
    restarted while the run goes on. Its leaders and transaction coordinators move; batches keep
    committing, and neither KafkaEosNoBatchCommitted nor KafkaEosOutputHeldBack is raised (pending
    or firing) from the kill until 60 s after the restart. The longest wait for a commit and the
    stall threshold are printed; every order comes out exactly once."""
    raised: dict[str, str] = {}
    with local_broker(ClusterSettings(nodes=3, heap="384m")) as broker:
        cluster, bootstrap = broker.cluster, broker.bootstrap
        with issue_64_rig(bootstrap, tmp_path, prometheus_binary) as rig:
            path, prometheus_port = rig.path, rig.prometheus_port
            before = committed_batches(path)
            victim = cluster.nodes[0].node_id
            cluster.stop_node(victim, kill=True)
            down = time.monotonic()
            watch_until = down + 30
            while time.monotonic() < watch_until:
                raised.update(alerts_raised(prometheus_port))
                time.sleep(0.5)
            during = committed_batches(path) - before
            with urllib.request.urlopen(f"http://127.0.0.1:{rig.monitor_port}/metrics", timeout=10) as answer:
                (tmp_path / "monitor-metrics.txt").write_bytes(answer.read())
            cluster.start_node(victim)
            cluster.wait_ready(120)
            watch_until = time.monotonic() + 60
            while time.monotonic() < watch_until:
                raised.update(alerts_raised(prometheus_port))
                time.sleep(0.5)
            longest = value(prometheus_port, 'max(max_over_time(kafka_eos_input_waiting_seconds[5m]))')
            threshold = value(prometheus_port, 'max(kafka_eos_stall_threshold_seconds)')
            after = committed_batches(path) - before
            sent = rig.feeder.stop()
        print(f"broker {victim} down 30 s: {during} batches committed while it was down, {after} until 60 s after "
              f"its restart; longest input wait {longest} s, stall threshold {threshold} s; alerts raised: {raised}")
        assert during > 0, f"no batch committed while the broker was down:\n{tail(rig.log)}"
        assert "KafkaEosNoBatchCommitted" not in raised and "KafkaEosOutputHeldBack" not in raised, raised
        assert not [name for name in raised if name not in ("KafkaEosProbeFailing",)], raised
        again = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
        assert again.code == 0, again.log() + tail(rig.log)
        [orders] = sent.values()
        assert order_report(bootstrap, sent, rig.names[1]) == \
            {"out": orders, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


@pytest.mark.chaos  # ~3 min: `make chaos`; make test keeps the frozen and dead driver at defaults
def test_a_driver_killed_after_its_decision_holds_output_back_and_pages_from_the_monitor(
        bootstrap, tmp_path, prometheus_binary):
    """The driver (defaults but its trigger) killed right after batch 2's decision and kept down:
    KafkaEosOutputHeldBack fires from the monitor's held-back output (no driver series left) once
    the decided transactions have held it past the stall threshold plus the rule's `for:`, and
    clears once a restart commits the decided batch. Every order comes out exactly once."""
    names = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {names[0]: 3, names[1]: 3})
    first = produce_orders(bootstrap, names[0], 300)
    faults = tmp_path / "faults"
    faults.mkdir()
    path = pipeline_file(tmp_path, names, {"faultInjection": "after_decision@2", "faultInjectionDir": str(faults)})
    doc = yaml.safe_load(path.read_text())
    driver_port, monitor_port, prometheus_port = free_port(), free_port(), free_port()
    doc["checkpoint"]["trigger"] = "2 seconds"
    doc["source"].pop("max_offsets_per_trigger")
    doc["metrics"] = {"port": driver_port}
    path.write_text(yaml.safe_dump(doc))
    prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, driver_port, monitor_port, "2s"),
                                  tmp_path, prometheus_port)
    monitor = start_kafka_eos(["monitor", str(path), "--port", str(monitor_port)], bootstrap, tmp_path,
                              tmp_path / "monitor.log")
    log = tmp_path / "run.log"
    run = start_kafka_eos(["run", str(path)], bootstrap, tmp_path, log)
    restart = None
    figures: dict[str, float] = {}
    try:
        wait_until(lambda: "orders-json batch 0:" in log.read_text(), 300, "batch 0 committed")
        second = produce_orders(bootstrap, names[0], 200)
        wait_until(lambda: "orders-json batch 1:" in log.read_text(), 120, "batch 1 committed")
        third = produce_orders(bootstrap, names[0], 200)      # batch 2: killed after its decision
        wait_for((faults, "after_decision.*"), run, 300, log)
        kill_group(run)
        killed = time.monotonic()
        figures["held back fired"] = fires(prometheus_port, "KafkaEosOutputHeldBack", killed, 150)
        held = 'max(kafka_eos_output_held_back_seconds{exporter="monitor"})'
        assert value(prometheus_port, held) > 30
        assert value(prometheus_port, 'count(kafka_eos_output_held_back_seconds{exporter="driver"})') is None
        assert value(prometheus_port, 'max(kafka_eos_decided_uncommitted_transactions{exporter="monitor"})') >= 1
        restart = start_kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, tmp_path / "restart.log")
        restarted = time.monotonic()
        figures["held back cleared"] = cleared(prometheus_port, "KafkaEosOutputHeldBack", restarted, 300)
        assert restart.wait(300) == 0, tail(tmp_path / "restart.log")
    finally:
        for proc in (run, restart):
            if proc is not None:
                kill_group(proc)
        monitor.send_signal(signal.SIGTERM)
        monitor.wait(30)
        prometheus.terminate()
        prometheus.wait(30)
    print(", ".join(f"{what} {seconds:.1f} s" for what, seconds in figures.items()))
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
        doc["metrics"] = {"port": driver_port}                     # the stall threshold: 20 + 30 s
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
            second = produce_orders(broker.bootstrap, names[0], 100)
            wait_until(lambda: "orders-json batch 1:" in log.read_text(), 120, "batch 1 committed")  # batch 0's
            third = produce_orders(broker.bootstrap, names[0], 200)   # warm-up no longer sets the threshold
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
        assert order_report(broker.bootstrap, {first.run: 300, second.run: 100, third.run: 200}, names[1]) == \
            {"out": 600, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


@pytest.mark.chaos  # three runs and three verifies (~2 min): `make chaos`; make test keeps the stall and held-back case
def test_a_verify_that_fails_fires_from_the_monitor_and_a_verify_that_passes_clears_it(
        bootstrap, tmp_path, prometheus_binary):
    """The shipped KafkaEosVerifyFailed in a real Prometheus scraping `kafka-eos monitor` (no driver
    running): a record another transactional producer committed into the output between two runs
    makes the next batch fail verify (exit 6); the alert fires from the monitor's reading of the
    recorded verify run, and clears once a later verify run of the batches after it passes."""
    from confluent_kafka import Producer

    from integration_tests.pipeline.test_verify_recompute import verify
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
