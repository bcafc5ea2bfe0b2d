"""`kafka-eos dev registry up|down`: one local schema registry left running in the background.

Invariant: the state file ``<state dir>/dev-registry.json`` exists exactly while a registry started
by ``up`` may be running; ``down`` kills its process group and removes its directory.
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

from kafka_eos.connectors.dev.background import _alive
from kafka_eos.connectors.dev.java_env import state_root
from kafka_eos.connectors.dev.registry import LocalRegistry

STATE_FORMAT = 1


def state_file() -> Path:
    return state_root() / "dev-registry.json"


def up() -> str:
    """Start a registry (or reuse the running one) and return its Confluent-compatible URL."""
    if state_file().exists():
        state = json.loads(state_file().read_text())
        if _alive(state["pid"]):
            return state["url"]
        down()
    registry = LocalRegistry().start()
    state = {"format": STATE_FORMAT, "url": registry.url, "workdir": str(registry.workdir),
             "pid": cast(subprocess.Popen, registry.process).pid}  # start() ran the process
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text(json.dumps(state))
    return registry.url


def down() -> bool:
    """Stop the background registry; return False when none was running."""
    if not state_file().exists():
        return False
    state = json.loads(state_file().read_text())
    pid = state["pid"]
    if _alive(pid):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    if _alive(pid):
        os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(state["workdir"], ignore_errors=True)
    state_file().unlink()
    return True


def running_url() -> str | None:
    if not state_file().exists():
        return None
    state = json.loads(state_file().read_text())
    return state["url"] if _alive(state["pid"]) else None
