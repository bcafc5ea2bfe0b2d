"""The versioned offset map the kafka-eos source hands to Spark's offset log.

Wire format (JSON, format version 1)::

    {"v": 1, "topics": {"orders": {"0": 42, "1": 7}}}

Invariants:
- An offset is the *next* offset to read: a batch ending at ``{"0": 42}`` has read every
  committed record of partition 0 below 42 and none at or above it.
- ``encode`` is canonical: topics and partitions are sorted (partitions numerically), so two
  equal maps always give the same JSON text. Spark compares offsets by their JSON text, and
  "end == start" must mean "no new data".
- ``decode`` refuses maps of an unknown version or shape rather than guessing, so a checkpoint
  written by a future format never silently restarts from the wrong place.
"""
from __future__ import annotations

from typing import Any, Mapping

TopicPartition = tuple[str, int]
"""(topic, partition): the key of every offset map in kafka-eos."""

Offsets = dict[TopicPartition, int]
"""topic-partition -> next offset to read."""

FORMAT_VERSION = 1


class OffsetFormatError(ValueError):
    """A stored offset map is not one this version of kafka-eos can read."""


def encode(offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
    """Return the canonical, JSON-serialisable form of ``offsets`` (see module invariants)."""
    topics: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        offset = offsets[(topic, partition)]
        if partition < 0 or offset < 0:
            raise OffsetFormatError(f"cannot store offset {offset} for {topic}-{partition}: "
                                    "partitions and offsets are non-negative")
        topics.setdefault(topic, {})[str(partition)] = int(offset)
    return {"v": FORMAT_VERSION, "topics": topics}


def decode(stored: Mapping[str, Any]) -> Offsets:
    """Parse an offset map written by ``encode``; raise ``OffsetFormatError`` on anything else."""
    if not isinstance(stored, Mapping) or stored.get("v") != FORMAT_VERSION:
        version = stored.get("v") if isinstance(stored, Mapping) else None
        raise OffsetFormatError(
            f"kafka-eos source offsets of format version {version!r} found in the checkpoint; this "
            f"version reads format {FORMAT_VERSION}. Use the kafka-eos version that wrote the "
            f"checkpoint, or start the query with a new checkpointLocation. Stored: {dict(stored)!r:.300}")
    topics = stored.get("topics")
    if not isinstance(topics, Mapping):
        raise OffsetFormatError(f"kafka-eos source offsets lack a 'topics' map: {dict(stored)!r:.300}")
    out: Offsets = {}
    for topic, partitions in topics.items():
        if not isinstance(partitions, Mapping):
            raise OffsetFormatError(f"offsets of topic {topic!r} are not a partition map: {partitions!r:.200}")
        for partition, offset in partitions.items():
            try:
                p, o = int(partition), int(offset)
            except (TypeError, ValueError):
                raise OffsetFormatError(f"bad offset entry {topic}[{partition!r}] = {offset!r}") from None
            if p < 0 or o < 0 or isinstance(offset, bool):
                raise OffsetFormatError(f"bad offset entry {topic}[{partition!r}] = {offset!r}")
            out[(topic, p)] = o
    return out


def describe(tp: TopicPartition) -> str:
    """``topic-partition`` as Kafka tools print it."""
    return f"{tp[0]}-{tp[1]}"
