"""Savepoint rewind planning: where a new query replays its input from so that every window open at
the savepoint is rebuilt over all its records, and which replayed records it drops (docs/savepoints.md).

W is the watermark the old query's last committed batch applied (``batchWatermarkMs`` of that
batch's offset-log entry, ``eventTime.watermark`` of its progress). Spark evicts and emits a window
once its end is at or behind the watermark, so the old query emitted exactly the windows with
``end <= W``; the new query emits every window with ``end > W`` (windows of the NEW transform's spec).

Enforced here:
- ``open_from(window, W)`` is W0, the start of the earliest window open at W: the smallest start
  ``s = k * slide + offset`` with ``s + size > W`` (tumbling: slide = size). Every record of an open
  window has ``t >= W0``; a record with ``t < W0`` (or a null time) is in closed windows only.
- ``plan_rewind``: the rewind batch is the first batch whose largest event time is ``>= W0`` or
  unknown (no record for it: replaying more is exact, only longer). Every batch before it is known
  to hold no ``t >= W0``: by its own record, or, before the earliest batch, by ``prefix_bound_ms``
  (e.g. that batch's watermark + delay: Spark's watermark is the largest event time seen before
  the batch minus the delay); unproven, or no batch's start known at all, it raises
  ``EventTimesMissing`` (None is only "no batch may hold an open window's record": nothing to replay). Rewind offsets are that
  batch's start offsets; a partition the batch did not read starts where a later batch first did.
  The event times must cover every row the NEW transform may window (docs/savepoints.md).
- ``Floor``: a replayed record (offset below the savepoint's end of its partition) whose time is
  null or ``< W0`` is dropped from every branch: the old query counted it or sent it to the late
  topic. The aggregation keeps only ``t >= W0``, and the late branch judges with
  ``max(watermark, W)``, so a new record of a closed window is late, as in the old query. The
  replay is one batch, or batches cut only where the old query's were (else the watermark can
  rise mid-replay above what the old query applied and drop records of open windows).
- How Spark drops rows: a sliding window's expansion gives a row per (record, window), and the
  stateful operator drops each whose window end is at or behind the watermark for late events (the
  previous batch's offset-log watermark; 0 for batch 0). With ``size > slide`` a record with
  ``t >= W0`` may also be in windows closed at W; only a new query whose watermark for late events
  is already W when it replays drops those pairs: ``RewindPlan.needs_watermark_seed``, and the
  restore then writes an empty batch 0 under W before the replay, which becomes batch 1
  (``connectors/pipeline/watermark_seed``). Tumbling windows need no seed: the floor is enough.
- Refused (``StateNotRebuildable``, with the reason and the way on): session windows, state without
  a watermark, stream-stream joins, deduplication, arbitrary state. ``check_retention`` raises
  ``ReplayBeyondRetention`` naming partition, offsets and retention when Kafka no longer has the replay.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from kafka_eos import KafkaEosError
from kafka_eos.offsets.model import Offsets, TopicPartition, describe

Kind = Literal["stateless", "tumbling", "sliding", "session", "no_watermark", "stream_join", "dedup",
               "arbitrary_state"]
_WAY_ON = ("Keep the checkpoint unchanged, or start a new checkpoint.location with empty state "
           "(source.starting_offsets where the old query stopped; windows open then are emitted incomplete).")
REFUSALS: dict[str, str] = {
    "session": "an open session reaches back without bound, and Spark judges each record by its own "
               "session (t + gap) before merging, so a floor at the savepoint's watermark would drop the early "
               "records of open sessions",
    "no_watermark": "state without a watermark never closes: the replay would have to start at the "
                    "query's first offset, and nothing tells which results were already emitted",
    "stream_join": "a stream-stream join emits matches as they are found, before any watermark closes "
                   "them: a replay would emit them again",
    "dedup": "deduplication emits a record when first seen, not when the watermark passes it: a replay "
             "would emit again what the old query emitted",
    "arbitrary_state": "state of mapGroupsWithState/transformWithState has no window bound a replay can find",
}


class SavepointRefused(KafkaEosError, ValueError):
    """A savepoint cannot carry this pipeline's state exactly; the message says why and the way on."""


class StateNotRebuildable(SavepointRefused):
    """The plan's state cannot be rebuilt by a replay with a floor (``REFUSALS`` says why)."""

    @classmethod
    def of_kind(cls, kind: str) -> "StateNotRebuildable":
        return cls(f"a savepoint cannot carry this pipeline's state ({kind}): {REFUSALS[kind]}. {_WAY_ON}")


class EventTimesMissing(SavepointRefused):
    """The event-time records do not prove where the replay may start."""


class ReplayBeyondRetention(SavepointRefused):
    """Kafka no longer holds the start of the replay (retention, delete_records)."""


@dataclass(frozen=True)
class WindowSpec:
    """The new query's window (milliseconds); ``offset_ms`` is Spark's ``startTime``."""
    kind: Kind
    size_ms: int = 0
    slide_ms: int = 0
    offset_ms: int = 0

    @classmethod
    def tumbling(cls, size_ms: int, offset_ms: int = 0) -> "WindowSpec":
        return cls("tumbling", size_ms, size_ms, offset_ms)

    @classmethod
    def sliding(cls, size_ms: int, slide_ms: int, offset_ms: int = 0) -> "WindowSpec":
        return cls("sliding", size_ms, slide_ms, offset_ms)

    def __post_init__(self) -> None:
        if self.kind in ("tumbling", "sliding") and not (self.size_ms > 0 and self.slide_ms > 0):
            raise ValueError(f"a {self.kind} window needs a positive size and slide, got {self}")

    @property
    def overlapping(self) -> bool:
        """A record may be in several windows (sliding, size > slide)."""
        return self.kind == "sliding" and self.size_ms > self.slide_ms

    def starts(self, t_ms: int) -> list[int]:
        """The starts of the windows holding event time ``t_ms`` (Spark: ``start <= t < start + size``)."""
        last = (t_ms - self.offset_ms) // self.slide_ms * self.slide_ms + self.offset_ms
        return [s for s in range(last, t_ms - self.size_ms, -self.slide_ms) if s + self.size_ms > t_ms]


def open_from(window: WindowSpec, watermark_ms: int) -> int:
    """W0: the start of the earliest window whose end is after ``watermark_ms``."""
    k = (watermark_ms - window.size_ms - window.offset_ms) // window.slide_ms + 1
    return k * window.slide_ms + window.offset_ms


@dataclass(frozen=True)
class Floor:
    """What the new query drops and judges late (module docstring)."""
    w0_ms: int
    watermark_ms: int
    replay_end: Offsets

    def replayed(self, tp: TopicPartition, offset: int) -> bool:
        return offset < self.replay_end.get(tp, 0)

    def keeps(self, t_ms: int | None) -> bool:
        """Whether the aggregation takes a record: it is in a window open at the savepoint."""
        return t_ms is not None and t_ms >= self.w0_ms

    def drops(self, tp: TopicPartition, offset: int, t_ms: int | None) -> bool:
        """Whether a record leaves every branch: replayed, and handled by the old query."""
        return self.replayed(tp, offset) and not self.keeps(t_ms)

    def late_watermark(self, watermark_ms: int) -> int:
        """The watermark the late branch judges the new query's records with."""
        return max(watermark_ms, self.watermark_ms)


@dataclass(frozen=True)
class RewindPlan:
    rewind_batch: int | None     # None: nothing to replay (stateless, or no record of an open window read)
    offsets: Offsets             # where the new query's input starts
    floor: Floor | None          # None: stateless; else applies to every batch of the new query
    needs_watermark_seed: bool   # the replay's late rows must be judged with W (see the module docstring)


NOTHING_BEFORE = -(2 ** 63)
"""``prefix_bound_ms`` of a checkpoint whose earliest recorded batch is its first and did not start
from a savepoint: the pipeline read nothing before it."""


def plan_rewind(window: WindowSpec, watermark_ms: int, max_times: Mapping[int, int | None],
                starts: Mapping[int, Offsets], end: Offsets, prefix_bound_ms: int | None) -> RewindPlan:
    """The rewind of a savepoint whose last committed batch ended at ``end``.

    ``max_times``: batch id -> the largest event time of its rows (None: no rows); a batch absent is
    unknown. ``starts``: batch id -> its start offsets, every batch from the earliest recorded one to
    the last. ``prefix_bound_ms``: no row read before the earliest batch of ``starts`` has a later
    time: ``NOTHING_BEFORE``, that batch's watermark + delay, or (a checkpoint started from a
    savepoint) that savepoint's W0 - 1; None when unknown."""
    if window.kind == "stateless":
        return RewindPlan(None, dict(end), None, False)
    if window.kind not in ("tumbling", "sliding"):
        raise StateNotRebuildable.of_kind(window.kind)
    w0 = open_from(window, watermark_ms)
    batch = rewind_batch(w0, max_times, _contiguous(starts), prefix_bound_ms)
    offsets = dict(end) if batch is None else rewind_offsets(batch, starts, end)
    return RewindPlan(batch, offsets, Floor(w0, watermark_ms, dict(end)), window.overlapping)


def _contiguous(starts: Mapping[int, Offsets]) -> list[int]:
    batches = sorted(starts)
    missing = sorted(set(range(batches[0], batches[-1] + 1)) - set(batches)) if batches else []
    if missing:
        raise EventTimesMissing(f"the start offsets of batches {missing} are not known: the replay's start "
                                "cannot be proven")
    return batches


def rewind_batch(w0_ms: int, max_times: Mapping[int, int | None], batches: list[int],
                 prefix_bound_ms: int | None) -> int | None:
    """The first of ``batches`` that may hold ``t >= w0_ms`` (unknown times may); None when none does.
    Raises ``EventTimesMissing`` when no batch's start is known (nothing proves what to replay), or
    unless the rows before the first batch are bounded below ``w0_ms``."""
    if not batches:
        raise EventTimesMissing(
            f"no batch's start offsets are known (neither Spark's offset log nor an event-time record keeps one "
            f"for the last batch), so the replay of the windows open at the savepoint (from {w0_ms} ms on) has no "
            "proven start. Take the savepoint while the event-time records, with their batches' start offsets, "
            f"reach back to the earliest open window, or {_WAY_ON[0].lower()}{_WAY_ON[1:]}")
    if prefix_bound_ms is None or prefix_bound_ms >= w0_ms:
        known = "unknown" if prefix_bound_ms is None else f"up to {prefix_bound_ms} ms"
        raise EventTimesMissing(
            f"the batches before batch {batches[0]} may hold event times at or after {w0_ms} ms (the start of "
            f"the earliest window open at the savepoint): their times are {known}, their records gone. Take the "
            f"savepoint while the event-time records reach back to the earliest open window, or "
            f"{_WAY_ON[0].lower()}{_WAY_ON[1:]}")
    for batch in batches:
        if batch not in max_times or _may_reach(max_times[batch], w0_ms):
            return batch
    return None


def _may_reach(max_ms: int | None, w0_ms: int) -> bool:
    return max_ms is not None and max_ms >= w0_ms


def rewind_offsets(batch: int, starts: Mapping[int, Offsets], end: Offsets) -> Offsets:
    """``batch``'s start offsets; a partition it did not read starts where a later batch first did."""
    later = [starts[b] for b in sorted(starts) if b >= batch]
    out: Offsets = {}
    for tp, stop in end.items():
        out[tp] = next((s[tp] for s in later if tp in s), stop)
    return out


@dataclass(frozen=True)
class Shortfall:
    tp: TopicPartition
    rewind: int
    earliest: int


def retention_shortfalls(rewind: Offsets, end: Offsets, earliest: Mapping[TopicPartition, int]) -> list[Shortfall]:
    """The partitions whose replay ``[rewind, end)`` starts below Kafka's earliest offset."""
    return [Shortfall(tp, off, earliest[tp]) for tp, off in sorted(rewind.items())
            if off < end.get(tp, off) and earliest.get(tp, 0) > off]


def check_retention(rewind: Offsets, end: Offsets, earliest: Mapping[TopicPartition, int],
                    retention_ms: Mapping[str, int | None]) -> None:
    """Raise ``ReplayBeyondRetention`` when a partition no longer has the start of its replay."""
    short = retention_shortfalls(rewind, end, earliest)
    if not short:
        return
    parts = "; ".join(f"{describe(s.tp)}: the replay starts at offset {s.rewind}, the earliest offset is "
                      f"{s.earliest} (retention.ms {_retention(retention_ms.get(s.tp[0]))})" for s in short)
    raise ReplayBeyondRetention(
        f"the replay that rebuilds the open windows does not fit in the input's retention: {parts}. "
        "Raise the topics' retention.ms above the age of the earliest open window before the next "
        f"savepoint, or {_WAY_ON[0].lower()}{_WAY_ON[1:]}")


def _retention(ms: int | None) -> str:
    return "unknown" if ms is None else ("-1, unlimited (records deleted otherwise)" if ms < 0 else str(ms))
