"""FaultPlan: where the crash tests pause or kill a run (off unless configured), and how a point fires.

At a configured point the process writes ``<dir>/<point>.<pid>`` and then blocks until
``<dir>/release`` (releases every point) or ``<dir>/release-<point>`` (that point only) appears
(at most 10 minutes), so a test can SIGKILL it at exactly that step of the protocol, or pause it
there while another run takes over. Each point fires once per directory, claimed atomically
(``<dir>/claimed-<point>``): of tasks reaching it at once only one blocks, and a retried task or
a restarted query passes it. Points: ``task_start`` (an executor's write task before its first
row reaches the writer, i.e. before ``init_transactions``), ``task_write`` (mid-write on an
executor), ``before_decision``, ``after_decision``, ``between_end_txns``, ``after_end_txns``.
A spec names one or several points, comma-separated: ``point[@batch][,point[@batch]...]``
(each point at most once); ``point``/``batch_id`` are the first of them.
Production code does not consult a plan: ``fault_injection`` wraps the protocol's collaborators
with one when a plan is set. A user cannot set one by accident: the sink options that carry it
(``faultInjection``, ``faultInjectionDir``) are refused unless ``KAFKA_EOS_TEST_HOOKS=1``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, TypeVar

T = TypeVar("T")

POINTS = ("task_start", "task_write", "before_decision", "after_decision", "between_end_txns", "after_end_txns")
RELEASE_ALL = "release"


@dataclass(frozen=True)
class FaultPlan:
    point: str | None = None
    batch_id: int | None = None
    directory: str | None = None
    more: tuple[tuple[str, int | None], ...] = ()  # further (point, batch) pairs of the spec

    @classmethod
    def parse(cls, spec: str | None, directory: str | None) -> "FaultPlan":
        """``spec`` is ``point``, ``point@batch``, or several of them comma-separated."""
        if not spec:
            return cls()
        targets = [cls._target(part.strip()) for part in spec.split(",") if part.strip()]
        names = [point for point, _ in targets]
        if len(set(names)) != len(names):
            raise ValueError(f"fault spec {spec!r} names a point twice; each point fires once per directory")
        (point, batch), *more = targets
        return cls(point, batch, directory or "/tmp", tuple(more))

    @staticmethod
    def _target(part: str) -> tuple[str, int | None]:
        point, _, batch = part.partition("@")
        if point not in POINTS:
            raise ValueError(f"unknown fault point {point!r}; one of {POINTS}")
        return point, int(batch) if batch else None

    def targets(self) -> tuple[tuple[str, int | None], ...]:
        return ((self.point, self.batch_id), *self.more) if self.point else ()

    @property
    def active(self) -> bool:
        return self.point is not None

    def aims_at(self, point: str, batch_id: int) -> bool:
        return any(p == point and (b is None or b == batch_id) for p, b in self.targets())

    def hit(self, point: str, batch_id: int) -> None:
        if not self.aims_at(point, batch_id):
            return
        if self.directory is None:  # a plan built by parse() always has one
            raise TypeError(f"fault plan for {point!r} has no directory; build it with FaultPlan.parse")
        directory = Path(self.directory)
        try:  # atomic claim: of tasks reaching the point at once, exactly one fires
            os.close(os.open(directory / f"claimed-{point}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        marker = directory / f"{point}.{os.getpid()}"
        marker.write_text(str(batch_id))
        releases = (directory / RELEASE_ALL, directory / f"release-{point}")
        deadline = time.monotonic() + 600
        while not any(r.exists() for r in releases) and time.monotonic() < deadline:
            time.sleep(0.1)  # the test kills us here, or releases us


def paused(items: Iterator[T], plan: FaultPlan, batch_id: int, *, on_first: str | None = None,
           after_first: str | None = None) -> Iterator[T]:
    """``items`` unchanged, with ``plan.hit(on_first, batch_id)`` once the first item has been received
    and before it is handed on (a task paused with its input read, before it writes), and
    ``plan.hit(after_first, batch_id)`` once the first item has been handed on and the next is asked
    for (a task paused mid-write)."""
    for index, item in enumerate(items):
        if index == 0 and on_first:
            plan.hit(on_first, batch_id)
        yield item
        if index == 0 and after_first:
            plan.hit(after_first, batch_id)
