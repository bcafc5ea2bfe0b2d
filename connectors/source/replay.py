"""Replay: a stream that plans each batch as another checkpoint's offset log recorded it
(source option ``replayOffsetLog``; ``verify --recompute`` re-runs a pipeline's batches with it).

    replayOffsetLog = {"recorded": <checkpoint that ran>, "into": <this query's checkpoint>, "through": B}

Invariants:
- ``latestOffset`` for batch k+1 (k: the newest batch in this query's own offset log, where Spark
  wrote it before running k) returns what the recorded log holds for k+1, for the same scan: the
  scan whose own line of batch k is the ``start`` Spark passes. Past ``through``, or without a
  recorded k+1, it returns ``start``: no new data. A recorded batch without new data stays one,
  so Spark decides no-data batches (watermark, state eviction) as it did in the recorded run.
- Two scans with the same start but different recorded ends cannot be told apart:
  ``ReplayError``, naming the batch.
- Reads only: the recorded checkpoint is never written.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kafka_eos import KafkaEosError


class ReplayError(KafkaEosError, RuntimeError):
    """The recorded offset log cannot be replayed as it is; the message names the batch."""


@dataclass(frozen=True)
class ReplaySpec:
    recorded: str   # the checkpoint whose offset log is replayed
    into: str       # this query's own checkpoint
    through: int    # the last batch to plan

    def text(self) -> str:
        return json.dumps({"recorded": self.recorded, "into": self.into, "through": self.through})

    @classmethod
    def parse(cls, text: str) -> "ReplaySpec":
        try:
            data = json.loads(text)
            return cls(str(data["recorded"]), str(data["into"]), int(data["through"]))
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"option replayOffsetLog {text!r}: give "
                             '{"recorded": <checkpoint>, "into": <checkpoint>, "through": <batch>}') from None


def _offsets(line: str) -> Any:
    return json.loads(line)


def recorded_end(spec: ReplaySpec, start: dict) -> dict:
    """The end of the next batch as the recorded run planned it (``start`` when it planned none)."""
    from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
    own, recorded = CheckpointReader(spec.into), CheckpointReader(spec.recorded)
    planned = own.offset_batches()
    batch = planned[-1] + 1 if planned else 0
    entry = recorded.offsets(batch) if batch <= spec.through else None
    if entry is None:
        return start
    mine = own.offsets(batch - 1) if planned else None
    scans = range(len(entry.sources)) if mine is None else \
        [j for j, line in enumerate(mine.sources) if j < len(entry.sources) and _offsets(line) == start]
    ends = {entry.sources[j] for j in scans}
    if len(ends) != 1:
        raise ReplayError(f"batch {batch}: the recorded offset log has {len(ends) or 'no'} ends for a scan "
                          f"starting at {json.dumps(start)}; it cannot be replayed scan by scan")
    return _offsets(ends.pop())
