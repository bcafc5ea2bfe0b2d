"""docker/engine.sh against engines of its own (never the machine's running service): a TCP
DOCKER_HOST is used as it is, and a service that answers its ping but cannot serve containers is
restarted when the script started it, reported when not. Each case serves on a socket or port of
its own and stops what it started."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from integration_tests.broker_containers import engine_unavailable_reason
from kafka_eos.connectors.dev.local_kafka import free_port

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docker" / "engine.sh"

# A Docker API look-alike on a unix socket: it answers /_ping as podman does (with the libpod
# header) and fails every other request, as a service whose container starts fail does.
BROKEN_SERVICE = r'''
import http.server, os, socketserver, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        ok = self.path.endswith("/_ping")
        body = b"OK" if ok else b'{"cause": "write child: broken pipe", "message": "write child: broken pipe", "response": 500}'
        self.send_response(200 if ok else 500)
        self.send_header("Libpod-API-Version", "4.3.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_HEAD = do_DELETE = answer
    def log_message(self, *args):
        pass
class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    def get_request(self):
        request, _ = self.socket.accept()
        return request, ("local", 0)
Server(sys.argv[1], Handler).serve_forever()
'''


@pytest.fixture(scope="module", autouse=True)
def podman_engine():
    if not shutil.which("podman") or os.geteuid() != 0:
        pytest.skip("needs root and podman (docker/engine.sh sets them up)")
    reason = engine_unavailable_reason()
    if reason:
        pytest.skip(reason)


def engine_sh(docker_host: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_HOST": docker_host}
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=300)


def wait_for(check, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def stop(proc_or_pid) -> None:
    pid = proc_or_pid if isinstance(proc_or_pid, int) else proc_or_pid.pid
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(40):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if not isinstance(proc_or_pid, int) and proc_or_pid.poll() is not None:
            return
        time.sleep(0.25)
    os.kill(pid, signal.SIGKILL)


def test_a_tcp_docker_host_is_used_as_it_is():
    port = free_port()
    host = f"tcp://127.0.0.1:{port}"
    service = subprocess.Popen(["podman", "system", "service", "--time=0", host],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/_ping"],
                                        capture_output=True).returncode == 0)
        answering = engine_sh(host)
        assert answering.returncode == 0, answering.stdout + answering.stderr
        assert answering.stdout.strip() == f"container engine: {host} answers; nothing changed"
    finally:
        stop(service)
    silent = engine_sh(host)
    assert silent.returncode == 1, silent.stdout
    assert f"none ({host} does not answer" in silent.stdout


def test_a_service_it_started_that_cannot_serve_is_restarted(tmp_path):
    sock = tmp_path / "podman.sock"
    broken = subprocess.Popen([sys.executable, "-c", BROKEN_SERVICE, str(sock)])
    started: list[int] = []
    try:
        wait_for(sock.is_socket)
        Path(f"{sock}.pid").write_text(f"{broken.pid}\n")  # as the script records a service it starts
        run = engine_sh(f"unix://{sock}")
        if Path(f"{sock}.pid").is_file():
            started.append(int(Path(f"{sock}.pid").read_text()))
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"stopped podman's service on unix://{sock} (pid {broken.pid}): it answered but could not start a container" \
            in run.stdout, run.stdout
        assert "write child: broken pipe" in run.stdout, run.stdout
        assert f"started podman's Docker API on unix://{sock}" in run.stdout, run.stdout
        assert broken.wait(10) is not None, "the broken service was stopped"
        assert started and started[0] != broken.pid
        again = engine_sh(f"unix://{sock}")
        assert again.returncode == 0 and "(a container started); nothing changed" in again.stdout, again.stdout
    finally:
        stop(broken)
        for pid in started:
            stop(pid)


def test_a_service_it_did_not_start_is_reported_not_touched(tmp_path):
    sock = tmp_path / "podman.sock"
    broken = subprocess.Popen([sys.executable, "-c", BROKEN_SERVICE, str(sock)])
    try:
        wait_for(sock.is_socket)
        run = engine_sh(f"unix://{sock}")
        assert run.returncode == 1, run.stdout
        assert f"none (podman on unix://{sock} answers but cannot start a container" in run.stdout
        assert "this script did not start it" in run.stdout
        assert broken.poll() is None, "a service the script did not start is left running"
    finally:
        stop(broken)
