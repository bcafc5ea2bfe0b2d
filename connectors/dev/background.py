"""`kafka-eos dev kafka up|down`: one local broker left running in the background.

Invariant: the state file ``<state dir>/dev-kafka.json`` exists exactly while a broker started by
``up`` may be running; ``down`` kills every process it lists and removes its directory.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import cast

from kafka_eos.connectors.dev.java_env import state_root
from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster

STATE_FORMAT = 1


def state_file() -> Path:
    return state_root() / "dev-kafka.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def up(nodes: int = 1, transaction_max_timeout_ms: int = 900_000, security: str = "plaintext",
       broker_settings: dict[str, str] | None = None) -> str:
    """Start a broker (or reuse the running one of the same ``security`` and ``broker_settings``:
    server.properties entries, e.g. ``auto.create.topics.enable=false``) and return its bootstrap
    string; ``client_settings()`` tells how to connect to a secured one."""
    settings = dict(sorted((broker_settings or {}).items()))
    if state_file().exists():
        state = json.loads(state_file().read_text())
        if (all(_alive(pid) for pid in state["pids"]) and state.get("security", "plaintext") == security
                and state.get("broker_settings", {}) == settings):
            return state["bootstrap"]
        down()
    cluster = LocalKafkaCluster(ClusterSettings(nodes=nodes, transaction_max_timeout_ms=transaction_max_timeout_ms,
                                                security=security, extra=tuple(settings.items())))
    try:
        cluster.start()
    except Exception:
        cluster.stop()
        raise
    state = {"format": STATE_FORMAT, "bootstrap": cluster.bootstrap, "workdir": str(cluster.workdir),
             "pids": [cast(subprocess.Popen, n.process).pid for n in cluster.nodes],  # start() ran every node
             "security": security,
             "broker_settings": settings}
    if cluster.security:
        state["client"] = {**cluster.security.redacted_conf(), "password_file": str(cluster.security.client_file("etl")),
                           "admin_file": str(cluster.security.client_file("admin"))}
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text(json.dumps(state))
    return cluster.bootstrap


def down() -> bool:
    """Stop the background broker; return False when none was running."""
    if not state_file().exists():
        return False
    state = json.loads(state_file().read_text())
    for pid in state["pids"]:
        if _alive(pid):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in state["pids"]):
        time.sleep(0.2)
    for pid in state["pids"]:
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(state["workdir"], ignore_errors=True)
    state_file().unlink()
    return True


def client_settings() -> dict[str, str]:
    """The running secured broker's client settings for the ``etl`` user, password redacted, plus
    the owner-only files holding the etl and admin settings with their passwords; {} if plaintext."""
    if not state_file().exists():
        return {}
    return dict(json.loads(state_file().read_text()).get("client", {}))


def running_bootstrap() -> str | None:
    if not state_file().exists():
        return None
    state = json.loads(state_file().read_text())
    return state["bootstrap"] if all(_alive(p) for p in state["pids"]) else None
