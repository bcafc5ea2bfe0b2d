"""The one reader of a Spark streaming checkpoint: its offset log, commit log and metadata.

    <checkpoint>/offsets/<batch>   v1, the batch metadata (JSON: watermark, timestamp, and "conf", the
                                   Spark settings the checkpoint fixed), then one line per source scan
    <checkpoint>/commits/<batch>   written when the batch's sink commit returned
    <checkpoint>/metadata          {"id": <query id>}

Invariants:
- Reads only, through ``checkpoint_files``' readers (a URI through the session's Hadoop where this
  process has one): looking at a checkpoint, local or remote, creates nothing; a missing
  checkpoint reads as empty (no batches, no query id).
- Batches are the file names that are whole numbers, in numeric order (10 is newer than 9).
- An offset-log entry is only taken as one when it starts with a version line (``v…``); a
  torn or empty file reads as None.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kafka_eos.connectors.pipeline.checkpoint_files import open_reader
from kafka_eos.txn.log.log_store import LogReader, child

_BATCH = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class OffsetEntry:
    """One offset-log entry: the batch, its metadata line, and the raw line of each source scan."""
    batch_id: int
    metadata: str
    sources: tuple[str, ...]

    def conf(self) -> dict[str, str]:
        """The Spark settings the checkpoint recorded with this batch (its metadata's ``conf``;
        empty when the line is not that JSON)."""
        try:
            data = json.loads(self.metadata)
        except ValueError:
            return {}
        conf = data.get("conf") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in conf.items()} if isinstance(conf, dict) else {}


def parse_entry(batch_id: int, text: str | None) -> OffsetEntry | None:
    if not text or not text.startswith("v"):
        return None
    lines = text.rstrip("\n").split("\n")
    return OffsetEntry(batch_id, lines[1] if len(lines) > 1 else "", tuple(lines[2:]))


def source_offsets(line: str) -> Any:
    """The offsets of one source line: the topic map of a kafka-eos v1 line, else the JSON as
    Spark's source wrote it (the text itself when it is not JSON)."""
    try:
        data = json.loads(line)
    except ValueError:
        return line
    if isinstance(data, dict) and isinstance(data.get("topics"), dict):
        return data["topics"]
    return data


class CheckpointReader:
    """Read-only view of the checkpoint at ``location`` (a path, ``file:`` or a remote URI)."""

    def __init__(self, location: str) -> None:
        self.location = location.rstrip("/")

    def _store(self, name: str) -> LogReader:
        return open_reader(child(self.location, name))

    def _batches(self, log: str) -> list[int]:
        return sorted(int(name) for name in self._store(log).names() if _BATCH.fullmatch(name))

    def offset_batches(self) -> list[int]:
        """Batches planned (offset log), oldest first."""
        return self._batches("offsets")

    def commit_batches(self) -> list[int]:
        """Batches committed (commit log), oldest first."""
        return self._batches("commits")

    def offsets(self, batch_id: int) -> OffsetEntry | None:
        return parse_entry(batch_id, self.offset_text(batch_id))

    def offset_text(self, batch_id: int) -> str | None:
        """The offset-log file of ``batch_id`` as Spark wrote it (None: there is none)."""
        return self._store("offsets").read(str(batch_id))

    def latest_offsets(self) -> OffsetEntry | None:
        """The newest readable offset-log entry."""
        store = self._store("offsets")
        for batch_id in reversed(self.offset_batches()):
            entry = parse_entry(batch_id, store.read(str(batch_id)))
            if entry is not None:
                return entry
        return None

    def query_id(self) -> str | None:
        """The query id Spark keeps in ``metadata``, if any."""
        text = open_reader(self.location).read("metadata")
        return json.loads(text.splitlines()[0]).get("id") if text else None
