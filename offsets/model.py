"""The versioned offset map the kafka-eos source hands to Spark's offset log.

Wire format (JSON, format version 1)::

    {"v": 1, "topics": {"orders": {"0": 42, "1": 7}}}

Two optional keys carry the query's start, which Spark's offset log does not keep for a
Python source (batch 0 is logged by its end only, and its start is asked for again with
``initialOffset()`` on every replay):
- ``"initial": true`` marks the start the source resolved in ``initialOffset()``;
- ``"start": {topic: {partition: offset}}`` on the end of the first batch is the start that
  batch was planned from. A replay of that batch reads from it, whatever a later
  ``initialOffset()`` resolves (``planned_start``).

A third optional key, ``"tasks": n`` on a batch's end, is the number of Spark tasks the batch was
planned with (``planned_tasks``): a replay groups its ranges into the same tasks whatever the
cluster then has. An end without it (written before kafka-eos recorded it) keeps the layout of
the ``maxTasksPerBatch`` option.

A fourth, ``"scan": name`` on a batch's end, names the scan that planned it (source option
``scanName``): a source that must find its own line in Spark's offset log (pyspark 4.0/4.1, which
hand ``latestOffset`` no start) tells two scans of the same topics apart by it (``scan_of``).

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

from kafka_eos import KafkaEosError

TopicPartition = tuple[str, int]
"""(topic, partition): the key of every offset map in kafka-eos."""

Offsets = dict[TopicPartition, int]
"""topic-partition -> next offset to read."""

FORMAT_VERSION = 1


class OffsetFormatError(KafkaEosError, ValueError):
    """A stored offset map is not one this version of kafka-eos can read."""


def encode(offsets: Mapping[TopicPartition, int], *, initial: bool = False,
           start: Mapping[TopicPartition, int] | None = None, tasks: int | None = None) -> dict[str, Any]:
    """Return the canonical, JSON-serialisable form of ``offsets`` (see module invariants);
    ``initial`` marks a resolved start, ``start`` records the start of the first batch, ``tasks``
    the batch's task count."""
    stored: dict[str, Any] = {"v": FORMAT_VERSION, "topics": _topics(offsets)}
    if initial:
        stored["initial"] = True
    if start is not None:
        stored["start"] = _topics(start)
    if tasks is not None:
        stored["tasks"] = _task_count(tasks)
    return stored


def is_initial(stored: Mapping[str, Any]) -> bool:
    """True for a start resolved by ``initialOffset()`` (not read from Spark's offset log)."""
    return stored.get("initial") is True


def planned_start(stored: Mapping[str, Any]) -> Offsets | None:
    """The start recorded on the end of the first batch, or None (any other batch end)."""
    start = stored.get("start")
    return None if start is None else decode({"v": FORMAT_VERSION, "topics": start})


def planned_tasks(stored: Mapping[str, Any]) -> int | None:
    """The task count recorded on a batch's end, or None (an end written before it was recorded)."""
    tasks = stored.get("tasks")
    return None if tasks is None else _task_count(tasks)


def with_scan(stored: Mapping[str, Any], scan: str | None) -> dict[str, Any]:
    """``stored`` naming the scan that planned it (unchanged without a name)."""
    return dict(stored) if scan is None else {**stored, "scan": scan}


def scan_of(stored: Mapping[str, Any]) -> str | None:
    """The scan named on a batch's end, or None."""
    scan = stored.get("scan")
    return scan if isinstance(scan, str) else None


def _task_count(tasks: Any) -> int:
    if isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1:
        raise OffsetFormatError(f"bad task count {tasks!r} on a batch end: a positive integer is stored")
    return tasks


def _topics(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    topics: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        offset = offsets[(topic, partition)]
        if partition < 0 or offset < 0:
            raise OffsetFormatError(f"cannot store offset {offset} for {topic}-{partition}: "
                                    "partitions and offsets are non-negative")
        topics.setdefault(topic, {})[str(partition)] = int(offset)
    return topics


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
