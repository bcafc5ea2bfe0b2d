"""Process handling for the local dev clusters: stopping one, process-tree look-ups (Linux ``ps``)."""
from __future__ import annotations

import signal
import subprocess


def stop_process(process: subprocess.Popen | None, sig: int = signal.SIGTERM, grace_s: float = 30) -> None:
    """Send ``sig`` to a running ``process``, wait ``grace_s``, then kill it."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, grandchildren, ...)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        child, parent = map(int, line.split())
        children.setdefault(parent, []).append(child)
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
