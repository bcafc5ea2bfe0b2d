"""Output topics' identities and what a change of one means to the sink (pure logic, plain values).

An output topic is known by its Kafka topic id and partition count (``OutputTopic``). ``compare``
names the change between the identity the sink recorded and the broker's current one:
    SAME       same id, same partition count;
    GREW       same id, more partitions (keys move to other partitions, as with Spark's own sink);
    SHRANK     same id, fewer partitions (Kafka cannot do this; a broken metadata answer);
    DELETED    the broker no longer knows the topic;
    RECREATED  another topic id under the same name (deleted, then created again: by hand or by
               the broker's ``auto.create.topics.enable`` on a producer's request).
``judge`` decides for a set of topics, and enforces:
- DELETED, RECREATED and SHRANK are refused: records of the batch would go to a topic that is
  not the one earlier batches went to, with another partition layout;
- GREW is accepted with a note, unless the user asked for a fixed layout (``fixed_partitions``);
- a refusal holds (``held``): once recorded, the topic stays refused at every later start, an
  automatic restart's included and whatever the broker shows then, until an operator accepts it
  (``accept``: ``kafka-eos accept-topic``). No restart accepts a change by itself: a supervisor
  restarts a stopped query within seconds, before anyone read its error;
- a topic seen for the first time is recorded as it is; a topic never recorded that the broker
  does not know is not judged (a producer may create it on its first write), unless records of
  the batch being decided went to it (``written``): then it vanished under the batch.
``accept`` decides what the operator's acceptance records: a changed or held topic the broker
now has with at least the recorded partition count (exactly that count with
``fixed_partitions``) is accepted; no topic, or fewer partitions, stays refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Collection, Mapping, cast


@dataclass(frozen=True)
class OutputTopic:
    name: str
    topic_id: str
    partitions: int

    def describe(self) -> str:
        return f"id {self.topic_id}, {self.partitions} partition{'s' if self.partitions != 1 else ''}"


class Change(str, Enum):
    SAME = "same"
    GREW = "grew"
    SHRANK = "shrank"
    DELETED = "deleted"
    RECREATED = "recreated"


REFUSED_KINDS = (Change.SHRANK, Change.DELETED, Change.RECREATED)


def compare(recorded: OutputTopic, current: OutputTopic | None) -> Change:
    if current is None:
        return Change.DELETED
    if current.topic_id != recorded.topic_id:
        return Change.RECREATED
    if current.partitions > recorded.partitions:
        return Change.GREW
    if current.partitions < recorded.partitions:
        return Change.SHRANK
    return Change.SAME


@dataclass(frozen=True)
class TopicChange:
    """A change of topic ``name`` from ``recorded`` (None: never recorded) to ``current`` (None: gone)."""
    name: str
    change: Change
    recorded: OutputTopic | None
    current: OutputTopic | None
    held: bool = False  # refused at an earlier start and not accepted since (``accept``)

    def describe(self) -> str:
        was = self.recorded.describe() if self.recorded else "not recorded"
        now = self.current.describe() if self.current else "unknown to the broker"
        what = "refused at an earlier start, not accepted since" if self.held else self.change.value
        return f"output topic '{self.name}' {what} (recorded: {was}; now: {now})"


@dataclass(frozen=True)
class Verdict:
    """``identities``: what to record now (the recorded ones, updated with every accepted change);
    ``changed``: whether that differs from the record; ``notes``: accepted changes, one line each;
    ``refused``: the changes that must stop the query."""
    identities: dict[str, OutputTopic]
    changed: bool = False
    notes: list[str] = field(default_factory=list)
    refused: list[TopicChange] = field(default_factory=list)


def _change(recorded: OutputTopic | None, current: OutputTopic | None) -> Change:
    """``compare``, and for a topic never recorded: DELETED while the broker does not know it."""
    if recorded is None:
        return Change.DELETED if current is None else Change.RECREATED
    return compare(recorded, current)


def _acceptable(recorded: OutputTopic | None, current: OutputTopic | None, fixed_partitions: bool) -> bool:
    if current is None:
        return False
    if recorded is None:
        return True
    if fixed_partitions:
        return current.partitions == recorded.partitions
    return current.partitions >= recorded.partitions


def judge(recorded: Mapping[str, OutputTopic], current: Mapping[str, OutputTopic | None], *,
          fixed_partitions: bool = False, refused_before: Collection[str] = (),
          written: Collection[str] = ()) -> Verdict:
    """Judge the broker's ``current`` identities (name -> identity, None: unknown topic) against
    the ``recorded`` ones. ``refused_before``: topics whose refusal is recorded and not accepted
    since (refused again, ``held``); ``written``: topics records of the batch being decided went to."""
    identities, notes, refused = dict(recorded), [], []
    for name in sorted(set(current) | set(refused_before)):
        now, was = current.get(name), recorded.get(name)
        if name in refused_before:
            refused.append(TopicChange(name, _change(was, now), was, now, held=True))
            continue
        if was is None:
            if now is not None:
                identities[name] = now
            elif name in written:
                refused.append(TopicChange(name, Change.DELETED, None, None))
            continue
        kind = compare(was, now)
        change = TopicChange(name, kind, was, now)
        if kind is Change.SAME:
            continue
        if kind is Change.GREW and not fixed_partitions:
            identities[name] = cast(OutputTopic, now)  # GREW: compare() saw a current identity
            notes.append(f"{change.describe()}: accepted; keys now hash to other partitions "
                         "(sink option fixedPartitions=true refuses this)")
        else:
            refused.append(change)
    return Verdict(identities, identities != dict(recorded), notes, refused)


def accept(recorded: Mapping[str, OutputTopic], current: Mapping[str, OutputTopic | None], *,
           fixed_partitions: bool = False, held: Collection[str] = ()) -> Verdict:
    """What an operator's acceptance records (``kafka-eos accept-topic``): every ``held`` topic and
    every topic ``current`` shows changed from its record, accepted when ``_acceptable``, else
    refused (nothing is recorded then). ``changed``: whether there is anything to record."""
    identities, notes, refused = dict(recorded), [], []
    for name in sorted(set(current) | set(held)):
        now, was = current.get(name), recorded.get(name)
        kind = _change(was, now)
        if name not in held and (kind is Change.SAME or was is None):
            if was is None and now is not None:
                identities[name] = now  # seen for the first time: recorded as the query would
            continue
        change = TopicChange(name, kind, was, now, held=name in held)
        if _acceptable(was, now, fixed_partitions):
            identities[name] = cast(OutputTopic, now)  # _acceptable() refuses a None
            notes.append(f"{change.describe()}: accepted by the operator; records committed before "
                         + ("are not in this topic" if kind is Change.RECREATED else "stay where they are"))
        else:
            refused.append(change)
    return Verdict(identities, identities != dict(recorded) or bool(held), notes, refused)
