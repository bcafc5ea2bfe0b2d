"""Fault-injection points for the crash tests and the chaos suite (off unless configured).

At a configured point the process writes ``<dir>/<point>.<pid>`` and then blocks until
``<dir>/release`` appears (at most 10 minutes), so a test can SIGKILL it at exactly that step
of the protocol, or pause it there while another run takes over. Each point fires once per directory,
claimed atomically (``<dir>/claimed-<point>``): of tasks reaching it at once only one blocks, and a
retried task or a restarted query passes it. Points: ``task_write`` (mid-write on an
executor), ``before_decision``, ``after_decision``, ``between_end_txns``, ``after_end_txns``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

POINTS = ("task_write", "before_decision", "after_decision", "between_end_txns", "after_end_txns")


@dataclass(frozen=True)
class FaultPlan:
    point: str | None = None
    batch_id: int | None = None
    directory: str | None = None

    @classmethod
    def parse(cls, spec: str | None, directory: str | None) -> "FaultPlan":
        """``spec`` is ``point`` or ``point@batch``."""
        if not spec:
            return cls()
        point, _, batch = spec.partition("@")
        if point not in POINTS:
            raise ValueError(f"unknown fault point {point!r}; one of {POINTS}")
        return cls(point, int(batch) if batch else None, directory or "/tmp")

    def hit(self, point: str, batch_id: int) -> None:
        if self.point != point or (self.batch_id is not None and self.batch_id != batch_id):
            return
        directory = Path(self.directory)
        try:  # atomic claim: of tasks reaching the point at once, exactly one fires
            os.close(os.open(directory / f"claimed-{point}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        marker = directory / f"{point}.{os.getpid()}"
        marker.write_text(str(batch_id))
        deadline = time.monotonic() + 600
        while not (directory / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.1)  # the test kills us here, or releases us
