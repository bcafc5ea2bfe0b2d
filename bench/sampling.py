"""A background thread that calls ``sample()`` every ``interval`` seconds until ``stop()`` or
until the sampled process tree is gone (``psutil.NoSuchProcess``)."""
from __future__ import annotations

import threading

import psutil


class PeriodicSampler:
    interval: float = 0.5

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except psutil.NoSuchProcess:
                return
            self._stop.wait(self.interval)

    def sample(self) -> None:
        raise NotImplementedError
