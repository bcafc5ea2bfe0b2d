"""ProducerOpening: a task's producer opened in a thread while the task waits for its first rows.

A sink task's first rows come after the source's Python worker, the JVM and the Arrow hand-over
(about 40 ms on small batches); opening the producer (connections, ``init_transactions``: 20-40 ms)
meanwhile takes it off the task's path. Enforced here:
- ``open_producer`` starts in a thread at construction and runs once;
- ``result`` waits for it and returns the producer, or raises what the open raised;
- ``discard`` (a task with nothing to write, or one that failed before its first rows) does not
  wait: an opened producer is handed to ``close`` now, one still opening when it is opened. An
  empty task behind a hung coordinator ends at once, and nothing this task opened stays open.
  An open that failed is discarded silently: a task that writes nothing never needed it.
"""
from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

P = TypeVar("P")


class ProducerOpening(Generic[P]):
    def __init__(self, open_producer: Callable[[], P], close: Callable[[P], None]) -> None:
        self._open, self._close = open_producer, close
        self._producer: P | None = None
        self._error: BaseException | None = None
        self._taken = self._discarded = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="kafka-eos-producer-open", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            producer = self._open()
        except BaseException as exc:  # noqa: BLE001 - handed to the task's thread by result()
            self._error = exc
            return
        with self._lock:
            if not self._discarded:
                self._producer = producer
                return
        self._close(producer)  # discarded while it opened

    def result(self) -> P:
        """The opened producer (once), or the open's error."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        with self._lock:
            assert self._producer is not None and not self._taken and not self._discarded, "taken once"
            self._taken = True
            return self._producer

    def discard(self) -> None:
        """Close what was opened unless ``result`` took it; without waiting for an open under way."""
        with self._lock:
            if self._taken or self._discarded:
                return
            self._discarded = True
            producer, self._producer = self._producer, None
        if producer is not None:
            self._close(producer)
