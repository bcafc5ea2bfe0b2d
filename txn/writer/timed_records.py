"""Records beside the sink log that are named by the time they were written (start sweeps,
verify runs): ``<folder>/<at_ms, 15 digits>-<random>.json``, JSON with a format version.

Enforced here: a record is written create-only (``LogStore``) and writing one keeps only the
newest ``keep`` of its folder; reading lists the records in time order and skips other names.
"""
from __future__ import annotations

import json
import re
import uuid

from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.stores import open_reader, open_store

_NAME = re.compile(r"^(\d+)-[0-9a-f]+\.json$")


def write_timed(folder: str, at_ms: int, record: dict, keep: int, role: StoreRole | None = None) -> str:
    """Create the record written at ``at_ms``; delete all but the newest ``keep``. Returns its name.
    ``role``: the writer role in a Kafka store (default: the process's)."""
    store = open_store(folder, role)
    name = f"{at_ms:015d}-{uuid.uuid4().hex[:8]}.json"
    store.create(name, json.dumps(record))
    for old in sorted(n for n in store.names() if _NAME.match(n))[:-keep]:
        store.delete(old)
    return name


def read_timed(folder: str, after_ms: int = -1) -> list[tuple[int, str, str]]:
    """(at_ms, name, text) of the records written after ``after_ms``, oldest first."""
    reader = open_reader(folder)
    out = []
    for name in sorted(reader.names()):
        match = _NAME.match(name)
        if match is None or int(match[1]) <= after_ms:
            continue
        text = reader.read(name)
        if text:
            out.append((int(match[1]), name, text))
    return out
