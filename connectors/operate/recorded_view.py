"""The recorded input of batches Spark's offset log no longer holds, for ``verify --recompute``.

Spark keeps the newest ``spark.sql.streaming.minBatchesToRetain`` entries of a checkpoint's offset
log (and as many versions of its state); the sink log keeps, for its own retention, each batch's
offset-log file as the sink saw it at commit (``BatchRecord.inputs``). ``plan`` finds the batches a
replay can re-run; ``build`` writes a *recorded view*, a directory the replay reads as the recorded
checkpoint (``ReplaySpec.recorded``) and copies its scratch checkpoint from:

    <view>/metadata           the checkpoint's own (the query id)
    <view>/offsets/<b>        for b in A-1..B: Spark's file, else the sink log's ``inputs`` text
    <view>/commits/<A-1>      Spark's file, else v1 {"nextBatchWatermarkMs": batch A's batchWatermarkMs}

Invariants:
- Reads the checkpoint and the sink log, creates nothing there; writes only inside ``into``.
- A plan that keeps state (the checkpoint's ``state/`` is not empty) whose first batch A > 0 has
  no state Spark still keeps before it (batch A-1 gone from the offset log) is ``deep``: its
  state is rebuilt by a replay with a floor (``recompute_rewind``), not copied.
- A batch is taken from the sink log only when Spark no longer holds it and its record's
  ``inputs`` is a whole offset-log entry; a record without it (written before inputs were kept)
  leaves the batch unreachable, with the reason verify gave before.
- The replay runs batches A..B with no gap, B the newest wanted batch it can reach: a batch before
  one whose input is gone is named missing, with that batch's reason.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, parse_entry
from kafka_eos.txn.log.log_store import child
from kafka_eos.connectors.pipeline.checkpoint_files import open_reader
from kafka_eos.txn.log.sink_log import SinkLogReader

GONE = ("Spark's offset log no longer holds batch {b} (it keeps spark.sql.streaming.minBatchesToRetain "
        "batches); verify a newer range")


@dataclass
class ViewPlan:
    first: int | None = None   # the batch the replay starts at (None: none can be re-run)
    through: int = -1          # the last batch it runs
    missing: dict[int, str] = field(default_factory=dict)   # batch -> why it cannot be re-run
    from_sink_log: dict[int, str] = field(default_factory=dict)  # batch -> offsets text Spark no longer holds
    sink_log: str = ""
    deep: bool = False         # the plan keeps state, and Spark no longer keeps the state before ``first``

    @property
    def needs_view(self) -> bool:
        """Whether the replay needs a batch Spark no longer holds (else it reads the checkpoint)."""
        return bool(self.from_sink_log) or self.deep


def keeps_state(checkpoint: str) -> bool:
    return bool(open_reader(child(checkpoint, "state")).names())


def recorded_inputs(log: SinkLogReader, batch: int) -> str | None:
    """Batch ``batch``'s offset-log text as the sink log recorded it, if whole."""
    record = log.get(batch)
    text = record.inputs if record is not None else None
    return text if text is not None and parse_entry(batch, text) is not None else None


def plan(checkpoint: str, sink_log: str, batches: list[int]) -> ViewPlan:
    """Where the replay of ``batches`` starts and ends, and what it needs from the sink log."""
    wanted = sorted(batches)
    if not wanted:
        return ViewPlan(sink_log=sink_log)
    held = CheckpointReader(checkpoint).offset_batches()
    spark, stateful, log = set(held), keeps_state(checkpoint), SinkLogReader(sink_log)
    found: dict[int, str | None] = {}

    def reachable(b: int) -> bool:
        if b in spark:
            return True
        if b not in found:
            found[b] = recorded_inputs(log, b)
        return found[b] is not None
    # the replay runs start..last with no gap: last, the newest wanted batch it can reach
    out = ViewPlan(sink_log=sink_log)
    last = next((b for b in reversed(wanted) if reachable(b)), -1)
    start = last
    while start > max(wanted[0] - 1, 0) and reachable(start - 1):
        start -= 1
    out.first = next((b for b in wanted if start <= b <= last and (b == 0 or b > start)), None)
    out.through = last if out.first is not None else -1
    for b in wanted:
        if out.first is None or not out.first <= b <= out.through:
            gone = b if not reachable(b) else b - 1 if b > 0 and not reachable(b - 1) else start - 1
            out.missing[b] = GONE.format(b=gone)
    if out.first is not None:
        out.from_sink_log = {b: t for b, t in found.items() if t is not None and out.first - 1 <= b <= last}
        out.deep = stateful and out.first > 0 and out.first - 1 not in spark
    return out


def watermark_of(text: str | None) -> int:
    """The ``batchWatermarkMs`` of an offset-log text (0 when absent or unreadable)."""
    entry = parse_entry(0, text)
    try:
        return int(json.loads(entry.metadata).get("batchWatermarkMs", 0)) if entry else 0
    except (ValueError, TypeError, AttributeError):
        return 0


def entries(checkpoint: str, view_plan: ViewPlan) -> dict[int, str]:
    """The offset-log text of each batch A-1..B of ``view_plan``: Spark's file while it holds it,
    else the sink log's; ``FileNotFoundError`` when Spark removed one meanwhile and the sink log has none."""
    assert view_plan.first is not None
    offsets = open_reader(child(checkpoint.rstrip("/"), "offsets"))
    texts: dict[int, str] = {}
    for b in range(max(view_plan.first - 1, 0), view_plan.through + 1):
        text = offsets.read(str(b))
        if text is None or parse_entry(b, text) is None:
            text = view_plan.from_sink_log.get(b) or recorded_inputs(SinkLogReader(view_plan.sink_log), b)
        if text is None:
            raise FileNotFoundError(f"Spark removed batch {b} from its offset log while verify read it, and "
                                    "the sink log has no input of it; verify a newer range")
        texts[b] = text
    return texts


def build(checkpoint: str, view_plan: ViewPlan, into: str) -> None:
    """Write the recorded view of ``view_plan`` (``needs_view``, not ``deep``) into the new directory ``into``."""
    assert view_plan.first is not None
    source, root = open_reader(checkpoint.rstrip("/")), Path(into)
    first = view_plan.first
    (root / "offsets").mkdir(parents=True)
    (root / "metadata").write_text(source.read("metadata") or "")
    texts = entries(checkpoint, view_plan)
    for b, text in texts.items():
        (root / "offsets" / str(b)).write_text(text)
    if first > 0:
        (root / "commits").mkdir()
        commit = open_reader(child(source.location, "commits")).read(str(first - 1))
        # Spark's commit of A-1 holds the watermark batch A was planned with (its batchWatermarkMs)
        (root / "commits" / str(first - 1)).write_text(commit or "v1\n" + json.dumps(
            {"nextBatchWatermarkMs": watermark_of(texts[first]) or watermark_of(texts[first - 1])},
            separators=(",", ":")))
