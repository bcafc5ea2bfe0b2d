"""Graceful stop of a running query: finish the running batch, let it commit, then stop.

A stop is requested by SIGTERM or SIGINT (Ctrl-C) in the running process, or by the stop marker
``<checkpoint>/kafka-eos-stop`` (what ``kafka-eos stop pipeline.yaml`` creates from another shell,
with its stop request: ``stop_request``).

Invariants:
- The source reads the marker too (its ``stopMarker`` option, ``source_options``): once it
  exists the source plans no new data, so the running batch is the last. A signal places the
  marker as well, so a stop asked either way ends the run the same way. With a DLQ (two scans,
  each planned on its own) a stop landing between the two scans' planning of one batch leaves
  the DLQ scan one batch behind; each scan resumes from its own offsets in the log, so every
  record still reaches its branch once.
- A requested stop stops the query only when it is idle between batches: no trigger is active
  and the newest batch of the offset log is in the commit log (read through the one checkpoint
  reader). Spark's ``query.stop()`` during a batch would interrupt it.
- A second signal forces the stop at once (still safe: the sink recovers the interrupted batch on
  the next run).
- The marker is removed when a stop is honoured or the run ends after one was asked. At start,
  a standing stop request refuses the run (``StopRequested``: ``stop_request``), and a marker
  without one (left by a signal's stop of a run that died) is removed before the query starts.
- The run's exit code says how it stopped (``StopControl.exit_code``): 0 by the marker or a stop
  request, 128 + the first signal's number by a signal alone (143: SIGTERM), so a platform that
  restarts a non-zero exit starts a run its own signal stopped again (a Kubernetes Job's pod
  evicted from its node), and ``kafka-eos stop`` ends it for good.
- The request and the marker live where the pipeline keeps its records (``config.records.records_home``:
  the Kafka record store, or the checkpoint). The source reads a local file (``source_marker``):
  the marker itself where it is one, else a file of this run's that ``StopControl`` places and
  removes with the marker (the source's planner runs beside the driver; over Spark Connect it
  does not, and the stop waits for the query to be idle). Where no marker can be placed (a store
  that refuses it) a signal still stops the run between batches, but the source keeps planning
  until the query is seen idle. The run writes a marker in a Kafka store as its ``runner`` role.
"""
from __future__ import annotations

import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Callable

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import records_home

from kafka_eos.connectors.exit_codes import of_signal
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, source_offsets
from kafka_eos.connectors.pipeline.stop_request import (StopRequested, check_no_stop_request, place_request,
                                                        request_stands, withdraw_stop)
from kafka_eos.connectors.source.stop_marker import MARKER, StopMarker, StopNotSupported, marker_location
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.log_store import local_path
from kafka_eos.txn.log.stores import checkpoint_folder

__all__ = ["MARKER", "StopControl", "StopNotSupported", "StopRequested", "check_no_stop_request", "request_stop",
           "source_options", "withdraw_stop"]
_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def request_stop(checkpoint: str) -> str:
    """Place the stop request and the stop marker in ``checkpoint``: the run honours the marker
    after its running batch; the request keeps every later start from running (``stop_request``)."""
    place_request(checkpoint)
    marker = StopMarker.of_checkpoint(checkpoint)
    marker.place()
    return marker.location


def source_marker(checkpoint: str, home: str) -> str:
    """The local file the source reads as the stop marker of the pipeline whose stop files are in
    ``home``: the marker itself where it is a local file, else a file of this process's run."""
    if local_path(home) is not None:
        return marker_location(home)
    return str(Path(tempfile.gettempdir()) / f"kafka-eos-stop-{os.getpid()}-{checkpoint_folder(checkpoint)}")


def source_options(cfg: PipelineConfig) -> dict[str, str]:
    """The source option that makes the stream plan no new data once a stop is requested."""
    checkpoint = cfg.checkpoint.location
    return {"stopMarker": source_marker(checkpoint, records_home(cfg))} if checkpoint else {}


def is_idle(status: dict, reader: CheckpointReader) -> bool:
    """No trigger running and every planned batch committed."""
    if status.get("isTriggerActive", True):
        return False
    planned = reader.offset_batches()
    return not planned or planned[-1] in set(reader.commit_batches())


def describe_offsets(reader: CheckpointReader) -> tuple[int | None, str]:
    """(the newest committed batch, its offsets as ``topic-partition:offset`` text)."""
    committed = reader.commit_batches()
    if not committed:
        return None, "none (no batch committed)"
    entry = reader.offsets(committed[-1])
    parts: list[str] = []
    for line in (entry.sources if entry else ())[:1]:  # every scan of a batch reads the same offsets
        offsets = source_offsets(line)
        if isinstance(offsets, dict):
            parts += [f"{topic}-{p}:{o}" for topic, parts_ in sorted(offsets.items()) if isinstance(parts_, dict)
                      for p, o in sorted(parts_.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)]
        else:
            parts.append(str(offsets))
    return committed[-1], ", ".join(parts) or "unknown"


class StopControl:
    """Signal handlers and the marker; ``poll(query)`` stops the query when a stop is due."""

    def __init__(self, checkpoint: str, emit: Callable[[str], None], home: str | None = None) -> None:
        self.checkpoint, self.home = checkpoint, home or checkpoint  # home: where the stop files are
        self.reader = CheckpointReader(checkpoint)
        self.emit = emit
        self.marker = StopMarker.of_checkpoint(self.home, StoreRole.RUNNER)
        local = source_marker(checkpoint, self.home)
        self.mirror = StopMarker(local) if local != self.marker.location else None  # what the source reads
        self.signals = 0
        self.signum: int | None = None  # the first signal's number
        self._announced = 0
        self.stopped: str | None = None  # "graceful" or "forced" once the query was stopped here
        self._saved: dict = {}

    def install(self) -> "StopControl":
        """Raise ``StopRequested`` while a stop request stands; remove a marker a signal left."""
        check_no_stop_request(self.home)
        if self.mirror is not None and self.mirror.present():
            self.mirror.remove()  # a file of this process's: a pid the system gave again
        if self.marker.present():
            self.emit(f"kafka-eos: removing a stop marker left from before this run: {self.marker.location}")
            self._remove_marker()
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                self._saved[sig] = signal.signal(sig, self._on_signal)
        return self

    def uninstall(self) -> None:
        """Restore the signal handlers; a marker of a stop this run was asked for goes with it
        (e.g. under ``--once``, where a source planning nothing ends the query by itself)."""
        if self.signals:
            self._remove_marker()
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved.clear()

    def _on_signal(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        self.signals += 1  # only counts: printing inside a handler could re-enter a running print
        if self.signum is None:
            self.signum = signum

    def ask(self, reason: str) -> None:
        """Stop after the running batch commits, for ``reason`` (a group removing this pipeline):
        as a stop marker does, with no standing request and exit code 0."""
        if self.signals == 0:
            self.signals = self._announced = 1
            self.emit(f"kafka-eos: {reason}; stopping after the running batch commits")
            self._place_marker()

    @property
    def exit_code(self) -> int:
        """0 unless a signal alone asked the stop (no marker before it, no stop request): 128 + its number."""
        if self.signum is None or request_stands(self.home):
            return 0
        return of_signal(self.signum)

    def requested(self) -> bool:
        if self.signals == 0 and self.marker.present():
            self.signals = 1
            self._announced = 1
            self.emit(f"kafka-eos: stop requested by {self.marker.location}; stopping after the running batch commits")
            self._on_marker(self._place_mirror, "place", "stopping once the query is idle between batches")
        if self.signals >= 1 > self._announced:
            self._place_marker()
            self.emit("kafka-eos: stop requested; stopping after the running batch commits "
                      "(signal again to stop at once)")
        if self.signals >= 2 > self._announced:
            self.emit("kafka-eos: stopping at once; the next run recovers the interrupted batch")
        self._announced = max(self._announced, min(self.signals, 2))
        return self.signals > 0

    def _place_marker(self) -> None:
        """So the source plans no new batch from now on (without it, the stop waits for an idle query)."""
        self._on_marker(self._place_mirror, "place", "stopping once the query is idle between batches")
        self._on_marker(self.marker.place, "place", "stopping once the query is idle between batches")

    def _place_mirror(self) -> None:
        if self.mirror is not None:
            self.mirror.place()

    def _remove_marker(self) -> None:
        if self.mirror is not None:
            self._on_marker(self.mirror.remove, "remove", "it is this run's own file; delete it by hand")
        self._on_marker(self.marker.remove, "remove",
                        "remove it before the next run or that run stops after its first batch")

    def _on_marker(self, action: Callable[[], None], verb: str, otherwise: str) -> None:
        try:
            action()
        except (OSError, StopNotSupported) as exc:
            self.emit(f"kafka-eos: could not {verb} the stop marker {self.marker.location} ({exc}); {otherwise}")

    def poll(self, query) -> bool:
        """Stop ``query`` if a stop is due; True when it was stopped here."""
        if not self.requested():
            return False
        forced = self.signals >= 2
        if not forced and not is_idle(query.status, self.reader):
            return False
        query.stop()
        self.stopped = "forced" if forced else "graceful"
        self._remove_marker()
        return True

    def summary(self, name: str) -> str:
        batch, offsets = describe_offsets(self.reader)
        stays = "; the stop request stands until `kafka-eos resume`" if request_stands(self.home) else ""
        if self.stopped == "forced":
            return f"kafka-eos {name}: stopped at once; last committed batch {batch} at offsets {offsets}{stays}"
        if batch is None:
            return f"kafka-eos {name}: stopped before any batch committed{stays}"
        return f"kafka-eos {name}: stopped after batch {batch} at offsets {offsets}{stays}"
