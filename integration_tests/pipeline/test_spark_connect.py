"""kafka-eos driven through Spark Connect: a real connect server (``spark-submit --class
...SparkConnectServer``, pyspark's bundled connect jar) whose Python workers import kafka-eos, and
clients that only send plans (``kafka-eos run --remote``, and the test job with ``--remote``).

The crash case kills the server's JVM (the query's driver) after the first batch's sink-log
record, restarts the server and the client, and counts the output exactly once.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("grpc", reason="Spark Connect clients need the connect extra: pip install 'kafka-eos[connect]'")

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders  # noqa: E402
from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env, spark_submit_binary  # noqa: E402
from kafka_eos.secrets import spark_redaction_conf  # noqa: E402
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, create_topic, unique  # noqa: E402
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, progress_lines  # noqa: E402
from integration_tests.pipeline_runs import JOB, kill_group, seed_input, tail  # noqa: E402

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
ORDER_TOPICS = {"orders": 3, "orders-priced": 3, "orders-dlq": 1}
START_TIMEOUT_S = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectServer:
    """One Spark Connect server process group (its JVM is the queries' driver), restartable."""

    def __init__(self, log: Path):
        self.log, self.port, self.proc = log, 0, None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start on a new port (a client of the killed server cannot reach the new one)."""
        self.port = _free_port()
        conf = {**SMALL_CONF, **spark_redaction_conf(), "spark.connect.grpc.binding.port": str(self.port),
                "spark.connect.grpc.binding.address": "127.0.0.1"}
        cmd = [spark_submit_binary(), "--master", "local[2]", "--class", SERVER_CLASS, "--name", "kafka-eos connect"]
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(cmd, env=python_env(), stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the connect server exited ({self.proc.returncode}):\n{tail(self.log)}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.5)
        self.kill()
        raise AssertionError(f"the connect server did not listen within {START_TIMEOUT_S}s:\n{tail(self.log)}")

    def kill(self) -> None:
        if self.proc is not None:
            kill_group(self.proc)
            self.proc = None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    connect = ConnectServer(tmp_path_factory.mktemp("connect") / "server.log")
    connect.start()
    yield connect
    connect.kill()


@pytest.mark.matrix
@pytest.mark.long  # minutes: make long (CI, after make test); make matrix on every other 4.x
def test_run_remote_example_exactly_once(server: ConnectServer, bootstrap: str, tmp_path: Path):
    """``kafka-eos run --remote``: the shipped orders-json example, aborted input and poison records."""
    create_topics(bootstrap, ORDER_TOPICS)
    orders = produce_orders(bootstrap, "orders", 4000, poison=2, aborted_every=1500, aborted_size=30)
    run = kafka_eos(["run", str(EXAMPLES / "orders-json.yaml"), "--once", "--remote", server.url], bootstrap, tmp_path)
    assert run.code == 0, run.log() + "\n--- server ---\n" + tail(server.log)
    assert progress_lines(run, "orders-json"), run.stdout
    assert order_report(bootstrap, {orders.run: 4000}) == \
        {"out": 4000, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


def test_run_remote_refuses_master_too(bootstrap: str, tmp_path: Path):
    run = kafka_eos(["run", str(EXAMPLES / "orders-json.yaml"), "--once", "--remote", "sc://127.0.0.1:1",
                     "--master", "local[2]"], bootstrap, tmp_path, timeout=120)
    assert run.code == 1 and "--master and --remote" in run.stderr, run.log()  # an invalid command line


def _client(server: ConnectServer, args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, str(JOB), "--remote", server.url, *args], env=python_env(),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for_sink_record(sink_log: Path, client: subprocess.Popen, server: ConnectServer, log: Path) -> None:
    deadline = time.monotonic() + 300
    while not sorted(sink_log.glob("[0-9]*.json")):
        if client.poll() is not None or time.monotonic() > deadline:
            kill_group(client)
            raise AssertionError(f"no sink-log record (client {client.returncode}):\n{tail(log)}\n"
                                 f"--- server ---\n{tail(server.log)}")
        time.sleep(0.1)


@pytest.mark.chaos  # two server starts and two client runs: the longer case (make test keeps the run above)
def test_server_driver_killed_mid_run_then_restarted_exactly_once(server: ConnectServer, bootstrap: str,
                                                                   tmp_path: Path):
    ids, topic, out = 4000, unique("connect-in"), unique("connect-out")
    seed_input(bootstrap, topic, ids)
    create_topic(bootstrap, out, partitions=3)
    args = ["--bootstrap", bootstrap, "--input", topic, "--output", out, "--checkpoint", str(tmp_path / "checkpoint"),
            "--prefix", unique("connect"), "--max-offsets", "700"]
    log = tmp_path / "client.log"
    client = _client(server, args, log)
    _wait_for_sink_record(tmp_path / "checkpoint" / "kafka-eos-sink", client, server, log)
    server.kill()
    try:
        code = client.wait(60)
    except subprocess.TimeoutExpired:  # the client retries a lost server for minutes: its user gives up
        kill_group(client)
        code = None
    assert code != 0, f"the query ended cleanly before the server was killed:\n{tail(log)}"
    server.start()
    again = _client(server, args, log)
    try:
        code = again.wait(400)
    except subprocess.TimeoutExpired:
        kill_group(again)
        raise AssertionError(f"the restarted client did not finish:\n{tail(log)}") from None
    assert code == 0, f"{tail(log)}\n--- server ---\n{tail(server.log)}"
    assert_exactly_once(check_exactly_once(bootstrap, out, ids=ids))
