"""Starting / ending offset options and their resolution to concrete offsets.

Option forms (the same as Spark's built-in Kafka source):
- ``earliest`` | ``latest``
- JSON offsets ``{"topicA": {"0": 23, "1": -2}}`` where -2 means earliest and -1 latest
- JSON timestamps ``{"topicA": {"0": 1700000000000}}`` (ms since epoch) or one global timestamp:
  the first offset whose record timestamp is >= the given one.

Invariants:
- ``resolve`` returns an offset for exactly the topic-partitions it is given, never more.
- "latest" is the read_committed end (last stable offset), what the lookup's ``latest`` returns.
- A JSON map must name every partition being read (as Spark requires); missing or unknown
  partitions are an error naming them, never a silent default.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, Protocol

from kafka_eos import KafkaEosError
from kafka_eos.offsets.model import Offsets, TopicPartition, describe

EARLIEST = -2
LATEST = -1

Kind = Literal["earliest", "latest", "offsets", "timestamps", "timestamp"]


class OffsetSpecError(KafkaEosError, ValueError):
    """An offset option is malformed or does not match the partitions being read."""


class OffsetLookup(Protocol):
    """The Kafka lookups resolution needs (``kafka_eos.offsets.kafka_offsets.KafkaOffsets`` in production)."""

    def earliest(self, tps: Iterable[TopicPartition]) -> Offsets: ...

    def latest(self, tps: Iterable[TopicPartition]) -> Offsets: ...

    def for_times(self, query: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]: ...


@dataclass(frozen=True)
class OffsetSpec:
    """A parsed offset option. ``values`` holds per-partition offsets or timestamps."""
    kind: Kind
    option: str
    values: tuple[tuple[TopicPartition, int], ...] = ()
    timestamp: int | None = None

    def as_dict(self) -> dict[TopicPartition, int]:
        return dict(self.values)


def _partition_map(option: str, text: str) -> tuple[tuple[TopicPartition, int], ...]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffsetSpecError(f"option {option}={text!r:.200} is not valid JSON ({exc.msg}); expected e.g. "
                              '{"topicA": {"0": 23, "1": -2}}') from None
    if not isinstance(parsed, dict) or not parsed:
        raise OffsetSpecError(f"option {option} must be a JSON object topic -> {{partition: value}}, got {text!r:.200}")
    out = []
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise OffsetSpecError(f"option {option}: topic {topic!r} must map to {{partition: value}}, got {parts!r:.100}")
        for partition, value in parts.items():
            try:
                p = int(partition)
            except ValueError:
                raise OffsetSpecError(f"option {option}: partition {partition!r} of topic {topic!r} is not a number") from None
            if not isinstance(value, int) or isinstance(value, bool):
                raise OffsetSpecError(f"option {option}: {topic}-{p} value {value!r} is not a whole number")
            out.append(((topic, p), value))
    return tuple(sorted(out))


def parse_offsets(option: str, text: str, *, ending: bool = False) -> OffsetSpec:
    """Parse ``earliest`` / ``latest`` / JSON offsets. Ending offsets refuse ``earliest`` (-2)."""
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        if ending and word == "earliest":
            raise OffsetSpecError(f"option {option}=earliest would read nothing; use 'latest' or JSON offsets")
        return OffsetSpec(word, option)  # type: ignore[arg-type]
    if not text.strip().startswith("{"):
        raise OffsetSpecError(f"option {option}={text!r:.100} is not 'earliest', 'latest' or a JSON offset map")
    values = _partition_map(option, text)
    for tp, value in values:
        if value < EARLIEST or (ending and value == EARLIEST):
            allowed = "-1 (latest) or an offset >= 0" if ending else "-2 (earliest), -1 (latest) or an offset >= 0"
            raise OffsetSpecError(f"option {option}: {describe(tp)} offset {value} is invalid; use {allowed}")
    return OffsetSpec("offsets", option, values)


def parse_timestamps(option: str, text: str) -> OffsetSpec:
    """Parse a JSON map topic -> partition -> timestamp (ms)."""
    values = _partition_map(option, text)
    for tp, value in values:
        if value < 0:
            raise OffsetSpecError(f"option {option}: {describe(tp)} timestamp {value} is negative")
    return OffsetSpec("timestamps", option, values)


def parse_global_timestamp(option: str, text: str) -> OffsetSpec:
    """Parse one timestamp (ms since epoch) applying to every partition."""
    try:
        ts = int(text)
    except ValueError:
        raise OffsetSpecError(f"option {option}={text!r:.100} is not a timestamp in milliseconds") from None
    if ts < 0:
        raise OffsetSpecError(f"option {option}={ts} is negative")
    return OffsetSpec("timestamp", option, timestamp=ts)


def _check_covers(spec: OffsetSpec, tps: set[TopicPartition]) -> None:
    named = {tp for tp, _ in spec.values}
    missing, unknown = sorted(tps - named), sorted(named - tps)
    if missing or unknown:
        parts = []
        if missing:
            parts.append("it lacks " + ", ".join(map(describe, missing)))
        if unknown:
            parts.append("it names partitions that are not being read: " + ", ".join(map(describe, unknown)))
        raise OffsetSpecError(f"option {spec.option} must give a value for every partition read "
                              f"({'; '.join(parts)}). Add or remove those entries, or use 'earliest'/'latest'.")


def resolve(spec: OffsetSpec, tps: Iterable[TopicPartition], lookup: OffsetLookup,
            timestamp_strategy: str = "error") -> Offsets:
    """Concrete offsets for ``tps``. ``timestamp_strategy``: 'error' or 'latest' when no record
    at or after a timestamp exists."""
    wanted = set(tps)
    if not wanted:
        return {}
    if spec.kind == "earliest":
        return dict(lookup.earliest(wanted))
    if spec.kind == "latest":
        return dict(lookup.latest(wanted))
    if spec.kind == "offsets":
        _check_covers(spec, wanted)
        values = spec.as_dict()
        earliest = lookup.earliest([tp for tp, v in values.items() if v == EARLIEST])
        latest = lookup.latest([tp for tp, v in values.items() if v == LATEST])
        return {tp: earliest[tp] if v == EARLIEST else latest[tp] if v == LATEST else v for tp, v in values.items()}
    if spec.kind == "timestamps":
        _check_covers(spec, wanted)
        query = spec.as_dict()
    else:
        query = {tp: int(spec.timestamp or 0) for tp in wanted}
    found = lookup.for_times(query)
    none = sorted(tp for tp in query if found.get(tp) is None)
    if none and timestamp_strategy != "latest":
        raise OffsetSpecError(
            f"option {spec.option}: no record at or after the given timestamp in "
            + ", ".join(f"{describe(tp)} (timestamp {query[tp]})" for tp in none)
            + ". Use an earlier timestamp, or set startingOffsetsByTimestampStrategy=latest.")
    latest = lookup.latest(none) if none else {}
    return {tp: latest[tp] if found.get(tp) is None else int(found[tp]) for tp in query}  # type: ignore[arg-type]
