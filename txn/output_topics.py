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
- after a refusal the user has seen (the query stopped; the refusal is recorded), a restart
  accepts a re-created topic with at least the recorded partition count (exactly that count
  with ``fixed_partitions``), with a note; fewer partitions, or still no topic, stay refused (a
  topic re-created while the query was down is thus refused at the first restart and accepted at
  the next one: every change stops the query once, with its error);
- a topic seen for the first time is recorded as it is; a topic never recorded that the broker
  does not know is not judged (a producer may create it on its first write), unless records of
  the batch being decided went to it (``written``): then it vanished under the batch.
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

    def describe(self) -> str:
        was = self.recorded.describe() if self.recorded else "not recorded"
        now = self.current.describe() if self.current else "unknown to the broker"
        return f"output topic '{self.name}' {self.change.value} (recorded: {was}; now: {now})"


@dataclass(frozen=True)
class Verdict:
    """``identities``: what to record now (the recorded ones, updated with every accepted change);
    ``changed``: whether that differs from the record; ``notes``: accepted changes, one line each;
    ``refused``: the changes that must stop the query."""
    identities: dict[str, OutputTopic]
    changed: bool = False
    notes: list[str] = field(default_factory=list)
    refused: list[TopicChange] = field(default_factory=list)


def _restart_accepts(recorded: OutputTopic, current: OutputTopic | None, fixed_partitions: bool) -> bool:
    if current is None:
        return False
    if fixed_partitions:
        return current.partitions == recorded.partitions
    return current.partitions >= recorded.partitions


def judge(recorded: Mapping[str, OutputTopic], current: Mapping[str, OutputTopic | None], *,
          fixed_partitions: bool = False, refused_before: Collection[str] = (),
          written: Collection[str] = ()) -> Verdict:
    """Judge the broker's ``current`` identities (name -> identity, None: unknown topic) against
    the ``recorded`` ones. ``refused_before``: topics whose change stopped the query before (a
    restart may accept them); ``written``: topics records of the batch being decided went to."""
    identities, notes, refused = dict(recorded), [], []
    for name in sorted(current):
        now, was = current[name], recorded.get(name)
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
        elif name in refused_before and _restart_accepts(was, now, fixed_partitions):
            identities[name] = cast(OutputTopic, now)  # _restart_accepts() refuses a None
            notes.append(f"{change.describe()}: accepted at this restart after the query stopped on it; "
                         "records committed before are not in this topic")
        else:
            refused.append(change)
    return Verdict(identities, identities != dict(recorded), notes, refused)
