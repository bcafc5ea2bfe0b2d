"""`kafka-eos run --restarts N`: keep a pipeline's driver running by restarting it when it dies.

Spark's own `--supervise` restarts only drivers it runs in cluster deploy mode, which a standalone
master refuses for Python applications (Spark 4.3: "Cluster deploy mode is currently not
supported for python applications on standalone clusters"), so the driver of a kafka-eos
pipeline runs on the submitting machine and is supervised from there.

Invariants:
- The run is a child process (``kafka-eos run`` without ``--restarts``, in a process group of its
  own); a run that exits 0 (finished, stopped by ``kafka-eos stop``, or not started because a stop
  request stands) is never restarted, nor is one that exits with a permanent code
  (``exit_codes.permanent``: invalid, not authorized, a state a person must decide): every restart
  would end the same way. Its code is returned.
- A run that fails otherwise (a transient code, a signal included) is restarted after a pause that
  doubles from 1 s to 60 s, at most ``restarts`` times in a row; a run that lasted ``STEADY_S``
  resets the count (a pipeline failing once a day is not failing in a loop). Then the last exit
  code is returned.
- SIGTERM or SIGINT to the supervisor is passed to the run, which stops as a signalled run does;
  nothing is restarted after it.
- The restart is what exactly-once needs after a crash: the next run commits (or re-writes) the
  batch the dead one decided, before its first batch.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable

from kafka_eos.connectors.exit_codes import CODES, permanent

STEADY_S = 600.0
MAX_PAUSE_S = 60.0


def pause_s(attempt: int) -> float:
    """The pause before restart number ``attempt`` (1, 2, ...): 1 s, doubling, at most 60 s."""
    return min(MAX_PAUSE_S, float(2 ** (attempt - 1)))


def child_args(argv: list[str]) -> list[str]:
    """``argv`` of a ``kafka-eos run`` without its ``--restarts`` option."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--restarts":
            skip = True
        elif not arg.startswith("--restarts="):
            out.append(arg)
    return out


class Supervisor:
    """``Supervisor(args, restarts, emit, name).run()`` -> the exit code of the last run."""

    def __init__(self, args: list[str], restarts: int, emit: Callable[[str], None], name: str,
                 start: Callable[[list[str]], subprocess.Popen] | None = None,
                 pause: Callable[[int], float] = pause_s) -> None:
        self.args, self.restarts, self.emit, self.name = args, restarts, emit, name
        self.start, self.pause = start or _start, pause
        self.stopping = threading.Event()
        self.proc: subprocess.Popen | None = None

    def _forward(self, signum: int, _frame) -> None:
        self.stopping.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signum)

    def run(self) -> int:
        previous = {s: signal.signal(s, self._forward) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._loop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _loop(self) -> int:
        failures = 0
        while True:
            began = time.monotonic()
            self.proc = self.start(self.args)
            code = self.proc.wait()
            if code == 0 or self.stopping.is_set():
                return code
            if permanent(code):
                self.emit(f"kafka-eos {self.name}: the run exited with {code} ({_name(code)}); not restarted: every "
                          "restart would stop the same way until a person acts (its error above names the runbook)")
                return code
            failures = 1 if time.monotonic() - began >= STEADY_S else failures + 1
            if failures > self.restarts:
                self.emit(f"kafka-eos {self.name}: the run exited with {code}; no restart left "
                          f"({self.restarts} in a row)")
                return code
            pause = self.pause(failures)
            self.emit(f"kafka-eos {self.name}: the run exited with {code}; restart {failures} of "
                      f"{self.restarts} in {pause:.0f} s")
            if self.stopping.wait(pause):
                return code


def _name(code: int) -> str:
    return next((c.name for c in CODES if c.code == code), "?")


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kafka_eos.connectors.cli", *args], env=dict(os.environ),
                            start_new_session=True)
