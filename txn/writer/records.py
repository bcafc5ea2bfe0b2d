"""Records: rows for ``KafkaWriter`` that are not Arrow rows (a sink task's own read of Kafka).

Columns as lists of one length: ``keys`` and ``values`` (bytes or None), ``headers`` (per row a
list of (name, value) pairs, or None) or None for none at all, ``timestamps`` (per row the source
record's timestamp in epoch ms, None where it has none) or None for none at all. The topic is the
sink's option.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Records:
    keys: list
    values: list
    headers: list | None = None
    timestamps: list | None = None

    @property
    def num_rows(self) -> int:
        return len(self.values)
