"""Two create-only markers beside the sink log: the transactional-id scheme and retirement.

Invariants enforced here:
- ``_ids.json`` {v, scheme, owner} records once which ids the checkpoint's transactions use:
  ``owner`` (``<prefix>-<owner>-<p>-<slot>``) for a sink log started by this build, ``legacy``
  (``<prefix>-<p>-<slot>``) for one whose ``_meta.json`` predates the marker (its decisions
  name legacy ids: recovery and the lingering cleanup must keep finding them). It is created
  before the sink log's ``_meta.json``, never rewritten; a second writer racing for it reads
  the one that won. ``read_id_scheme`` creates nothing.
- ``_retired.json`` {v, retired_at, host} marks a checkpoint that will not run again
  (``kafka-eos retire``); ``retired`` reads it, creating nothing.
- Unknown format versions are refused (``SinkLogError``), never guessed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from kafka_eos.txn.log.log_store import versioned
from kafka_eos.txn.log.stores import open_reader, open_store
from kafka_eos.txn.log.sink_log import META

IDS = "_ids.json"
RETIRED = "_retired.json"
MARKER_FORMAT = 1
OWNER, LEGACY = "owner", "legacy"


@dataclass(frozen=True)
class IdScheme:
    scheme: str  # OWNER | LEGACY
    owner: str | None = None

    @property
    def id_owner(self) -> str | None:
        return self.owner if self.scheme == OWNER else None


def _load(text: str | None, where: str) -> dict | None:
    return None if text is None else versioned(text, where, "marker", MARKER_FORMAT)


def read_id_scheme(location: str) -> IdScheme | None:
    """The recorded scheme of the sink log at ``location`` (None: not recorded; creates nothing)."""
    data = _load(open_reader(location).read(IDS), f"{location}/{IDS}")
    return None if data is None else IdScheme(data["scheme"], data.get("owner"))


def id_scheme(location: str, owner: str) -> IdScheme:
    """The scheme of the sink log at ``location``, recorded now if it is not yet: ``legacy`` when
    the log was started by a build without owners (``_meta.json`` without ``_ids.json``), else
    ``owner`` with ``owner``."""
    found = read_id_scheme(location)
    if found is not None:
        return found
    store = open_store(location)
    chosen = IdScheme(LEGACY) if store.exists(META) else IdScheme(OWNER, owner)
    try:
        store.create(IDS, json.dumps({"v": MARKER_FORMAT, "scheme": chosen.scheme, "owner": chosen.owner}))
    except FileExistsError:
        pass  # another driver recorded it at the same moment: use what it recorded
    return read_id_scheme(location) or chosen


def retired(location: str) -> dict | None:
    """The retirement marker of the sink log at ``location`` ({retired_at, host}), or None."""
    return _load(open_reader(location).read(RETIRED), f"{location}/{RETIRED}")


def mark_retired(location: str, retired_at: str, host: str) -> bool:
    """Create the retirement marker; False when it already existed."""
    try:
        open_store(location).create(RETIRED, json.dumps({"v": MARKER_FORMAT, "retired_at": retired_at, "host": host}))
    except FileExistsError:
        return False
    return True
