"""The stop marker: a file in the checkpoint's own store that asks a running query to stop.

``kafka-eos stop`` (or a signal in the running process) places ``<checkpoint>/kafka-eos-stop``;
the source plans no new data while it exists (``stopMarker`` option) and the run stops once idle.
``kafka-eos stop`` also places the stop request ``<checkpoint>/kafka-eos-stop-requested``
(``request_location``), a marker of the same kind that only ``kafka-eos resume`` removes.

Enforced here:
- the marker lives where the checkpoint does, through the sink log's store (``txn.log_store``):
  a local path, ``file:``, or a store pyarrow opens (``hdfs://``, ``s3://``, ``s3a://``); a
  location pyarrow cannot open is refused as ``StopNotSupported``, naming the signal instead;
- placing is create-only and idempotent (a marker already there is a stop already asked);
- ``present`` never raises: the source asks it at every trigger (the run every second), and a
  store that does not answer must not stop the query; the request is seen at a later trigger;
- the store's client is opened once per marker (an S3 client per check would resolve its
  credentials each time) and never pickled: a copy opens its own.
"""
from __future__ import annotations

import logging
from typing import Callable, TypeVar

from kafka_eos import KafkaEosError
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.log_store import LogReader, LogStore, child
from kafka_eos.txn.log.stores import open_reader, open_store

log = logging.getLogger(__name__)
MARKER = "kafka-eos-stop"
REQUEST = "kafka-eos-stop-requested"
Store = TypeVar("Store", bound=LogReader)


class StopNotSupported(KafkaEosError, ValueError):
    """The checkpoint is in a store no stop marker can be placed in."""


def marker_location(checkpoint: str) -> str:
    """The stop marker's location for ``checkpoint`` (a path or a URI, as the checkpoint's)."""
    return child(checkpoint, MARKER)


def request_location(checkpoint: str) -> str:
    """The stop request's location for ``checkpoint`` (beside the stop marker)."""
    return child(checkpoint, REQUEST)


class StopMarker:
    """The marker at ``location`` (``marker_location``'s form): its folder and its name; in a Kafka
    record store written as ``role`` (default: the process's)."""

    def __init__(self, location: str, role: StoreRole | None = None) -> None:
        self.location, self.role = location, role
        self.folder, _, self.name = location.rstrip("/").rpartition("/")
        self._reader: LogReader | None = None
        self._store: LogStore | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_reader": None, "_store": None}

    @classmethod
    def of_checkpoint(cls, checkpoint: str, role: StoreRole | None = None) -> "StopMarker":
        """The marker of ``checkpoint``, or of any folder that holds a pipeline's stop files."""
        return cls(marker_location(checkpoint), role)

    def _open(self, store: Callable[[str], Store]) -> Store:
        try:
            return store(self.folder)
        except (ValueError, NotImplementedError) as exc:  # pyarrow: no file system for this scheme
            raise StopNotSupported(f"no stop marker can be placed in {self.folder} ({exc}): stop the run with "
                                   "SIGTERM or Ctrl-C") from None

    def _read(self) -> LogReader:
        if self._reader is None:
            self._reader = self._open(open_reader)
        return self._reader

    def _write(self) -> LogStore:
        if self._store is None:
            self._store = self._open(lambda folder: open_store(folder, self.role))
        return self._store

    def exists(self) -> bool:
        return self._read().exists(self.name)

    def text(self) -> str:
        """What the marker holds ("" when there is none)."""
        return self._read().read(self.name) or ""

    def present(self) -> bool:
        """``exists``, False where the store cannot be asked now (see the module's rules)."""
        try:
            return self.exists()
        except (OSError, KafkaEosError) as exc:
            log.debug("kafka-eos: the stop marker %s could not be read: %s", self.location, exc)
            return False

    def place(self, text: str = "stop\n") -> None:
        """Create the marker (its folder too) holding ``text``; one already there is kept."""
        try:
            self._write().create(self.name, text)
        except FileExistsError:
            pass

    def remove(self) -> None:
        if self.exists():  # none there: nothing to open for writing (a store that refused the marker)
            self._write().delete(self.name)
