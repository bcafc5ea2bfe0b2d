"""`kafka-eos dev registry up|down`: a real Apicurio Registry left running, then nothing left."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil

from kafka_eos.connectors.dev.registry_background import state_file

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_eos.connectors.cli", *args], cwd=REPO, env=os.environ.copy(),
                          capture_output=True, text=True, timeout=300)


def test_dev_registry_up_then_down_leaves_nothing():
    up = run_cli("dev", "registry", "up")
    assert up.returncode == 0, up.stderr
    (line,) = up.stdout.splitlines()
    assert line.startswith("url=http://127.0.0.1:") and line.endswith("/apis/ccompat/v7"), line
    url = line.removeprefix("url=")
    state = json.loads(state_file().read_text())
    try:
        with urllib.request.urlopen(url + "/subjects", timeout=10) as response:
            assert isinstance(json.loads(response.read()), list), "the Confluent API answers: a list of subjects"
        process = psutil.Process(state["pid"])
        listening = [c.laddr for p in [process, *process.children(recursive=True)]
                     for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN]
        assert listening and all(addr.ip in ("127.0.0.1", "::ffff:127.0.0.1") for addr in listening), listening
        assert run_cli("dev", "registry", "up").stdout.strip() == line, "a second up reuses the running registry"
        assert run_cli("dev", "registry", "status").stdout.strip() == line
    finally:
        down = run_cli("dev", "registry", "down")
    assert down.returncode == 0 and down.stdout.strip() == "registry: stopped", down.stdout + down.stderr
    assert not psutil.pid_exists(state["pid"]) and not state_file().exists()
    assert not Path(state["workdir"]).exists()
    assert run_cli("dev", "registry", "down").stdout.strip() == "registry: nothing running"
