"""The planning of one micro-batch's end, as named steps over pure functions.

``plan_end`` runs, for a batch starting at ``begin`` (decoded from Spark's offset log):
  1. ``look_up``: the partitions the subscription has now (within the Trigger.AvailableNow
     target, if any) and their earliest and latest (read_committed) offsets: three lookups;
  2. ``detect`` (``offsets.data_loss``) finds deleted, reset and vanished offsets and the caller's
     policy (``on_findings``) raises or accepts them;
  3. ``resume_points``: where each still present partition's data starts (a deleted range resumes
     at the earliest offset; a reset or vanished partition reads nothing this batch);
  4. ``available_ends``: the latest offset, capped by the AvailableNow target, never behind the
     resume point;
  5. ``align`` (optional, event-time alignment) shapes the ends within [resume point, end];
  6. ``plan_limit`` (``offsets.admission``, with a ``ReadMaxRows`` limit) admits at most that many
     offsets across all partitions;
  7. ``entering_partitions``: new partitions, and partitions whose offsets went back, enter the end
     at their earliest offset: the following batches read them from there.
``batch_end`` then turns the end into what Spark stores (``offsets.model``): the start's JSON text
unchanged when there is no new data (a started query), and on batch 0 the start it was planned
from; ``held_end`` is the end while a graceful stop is requested (no new data).

Enforced here: every step is a function of its arguments (the lookups and the alignment are
passed in), an end never goes past the latest offset nor the AvailableNow target, and never
behind the resume point except where step 7 records an earliest offset for the next batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterable, Mapping, Protocol

from kafka_eos.offsets import model
from kafka_eos.offsets.admission import plan_limit
from kafka_eos.offsets.data_loss import DataLossFinding, detect
from kafka_eos.offsets.model import Offsets, TopicPartition


class Lookups(Protocol):
    """The three Kafka lookups planning needs (``offsets.kafka_offsets.KafkaOffsets`` in production)."""

    def partitions(self, subscription: Any) -> set[TopicPartition]: ...
    def earliest(self, tps: Collection[TopicPartition]) -> Offsets: ...
    def latest(self, tps: Collection[TopicPartition]) -> Offsets: ...


@dataclass(frozen=True)
class KafkaView:
    """What the lookups of step 1 found."""
    present: frozenset[TopicPartition]
    earliest: Offsets
    latest: Offsets


@dataclass(frozen=True)
class ResumePoints:
    """Step 3: where each present partition's data starts this batch, and the partitions whose
    offsets went back (``reset``: partition -> its earliest offset, entered at step 7)."""
    start: Offsets
    reset: Offsets


Align = Callable[[Offsets, Offsets, Offsets], Offsets]  # (resume points, ends, latest) -> aligned ends


def look_up(kafka: Lookups, subscription: Any, target: Mapping[TopicPartition, int] | None) -> KafkaView:
    """Step 1: the subscription's partitions now (only those of ``target``, if set) and their offsets."""
    present = set(kafka.partitions(subscription))
    if target is not None:
        present &= set(target)
    latest = kafka.latest(present)
    return KafkaView(frozenset(present), kafka.earliest(present), latest)


def new_partitions(begin: Mapping[TopicPartition, int], view: KafkaView) -> set[TopicPartition]:
    """Partitions Kafka lists that the batch's start does not have (discovered since)."""
    return set(view.present) - set(begin)


def find_data_loss(begin: Mapping[TopicPartition, int], view: KafkaView) -> list[DataLossFinding]:
    """Step 2's findings (``offsets.data_loss.detect``); the caller's policy decides on them."""
    return detect(begin, view.present, view.earliest, view.latest, new_partitions=new_partitions(begin, view))


def resume_points(begin: Mapping[TopicPartition, int], view: KafkaView,
                  findings: Iterable[DataLossFinding]) -> ResumePoints:
    """Step 3: ``begin`` for the present partitions, deleted ranges skipped to the earliest offset;
    a reset partition is left out (it enters at step 7), a vanished one dropped."""
    findings = list(findings)
    reset = {f.tp: view.earliest[f.tp] for f in findings if f.kind == "offsets-reset"}
    start = {tp: offset for tp, offset in begin.items() if tp in view.present and tp not in reset}
    start.update({f.tp: view.earliest[f.tp] for f in findings if f.kind == "offsets-deleted"})
    return ResumePoints(start, reset)


def available_ends(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                   target: Mapping[TopicPartition, int] | None) -> Offsets:
    """Step 4: for each partition of ``start``, its latest offset capped by ``target`` (AvailableNow),
    never below ``start``."""
    upper = {tp: latest[tp] if target is None else min(latest[tp], target.get(tp, latest[tp])) for tp in start}
    return {tp: max(upper[tp], start[tp]) for tp in start}


def entering_partitions(end: Mapping[TopicPartition, int], view: KafkaView, new: Collection[TopicPartition],
                        reset: Mapping[TopicPartition, int]) -> Offsets:
    """Step 7: ``end`` plus the new partitions at their earliest offset and the reset ones at theirs."""
    return {**end, **{tp: view.earliest[tp] for tp in new}, **reset}


def plan_end(begin: Mapping[TopicPartition, int], view: KafkaView, target: Mapping[TopicPartition, int] | None,
             on_findings: Callable[[list[DataLossFinding]], None], align: Align | None = None,
             max_rows: int | None = None) -> Offsets:
    """Steps 2-7 for a batch starting at ``begin`` over what step 1 found (``view``)."""
    findings = find_data_loss(begin, view)                                            # step 2
    on_findings(findings)
    resume = resume_points(begin, view, findings)                                     # step 3
    end = available_ends(resume.start, view.latest, target)                           # step 4
    if align is not None:
        end = align(resume.start, end, view.latest)                                   # step 5
    if max_rows is not None:
        end = plan_limit(resume.start, end, max_rows)                                 # step 6
    return entering_partitions(end, view, new_partitions(begin, view), resume.reset)  # step 7


def batch_end(start: Mapping[str, Any], begin: Mapping[TopicPartition, int],
              end: Mapping[TopicPartition, int], tasks: int | None = None) -> dict[str, Any]:
    """The end Spark stores for a batch from ``start`` (its stored form; ``begin`` decoded): the same
    JSON text when a started query has no new data, and on batch 0 (``start`` initial) the start;
    ``tasks``: the batch's task count, recorded on an end with new data."""
    if not model.is_initial(start):
        return dict(start) if dict(end) == dict(begin) else model.encode(end, tasks=tasks)
    return model.encode(end, start=begin, tasks=tasks if dict(end) != dict(begin) else None)


def held_end(start: Mapping[str, Any], begin: Mapping[TopicPartition, int]) -> dict[str, Any]:
    """The end while a graceful stop is requested: no new data (batch 0 still records its start)."""
    return batch_end(start, begin, begin)
