"""The stream reader where pyspark has no admission control for Python sources (4.0, 4.1).

There Spark calls ``latestOffset()`` with neither the batch's start nor a read limit, once per
trigger, on the reader that lives for the query in the driver's Python worker, and only after the
batch before has committed. So this reader keeps the start itself and plans exactly as
``KafkaStreamReader.latestOffset(start, limit)`` does, with ``maxOffsetsPerTrigger`` as its limit:

1. the start is the end this reader last returned, or the end of the batch Spark last ran
   (``partitions``: on a restart Spark re-runs the newest uncommitted batch first);
2. before either, the newest entry of the query's offset log: as the run read it in the driver
   before the start (option ``offsetLogEntry``: a checkpoint this worker's Python may not reach,
   ``worker_handoff``), else read from option ``checkpointLocation``; this scan's line, told apart
   from other kafka-eos scans by its ``scanName`` recorded on every end it plans
   (``offsets.model.with_scan``);
3. with no offset log (a new query), the start ``initialOffset`` resolves.

Invariants:
- The start is exactly the JSON Spark holds: without new data ``latestOffset`` returns it
  unchanged, so Spark plans no batch (it compares the text).
- Without ``checkpointLocation`` (and not replaying) the reader refuses to be built: a restart
  would otherwise plan from a start it cannot know. An offset log with no line of this scan, or
  two that differ without a name to choose, is refused with the fix, never guessed.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from pyspark.sql.types import StructType

from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader, OffsetEntry, parse_entry
from kafka_eos.connectors.source.options import SourceOptionError
from kafka_eos.connectors.source.stream_reader import KafkaStreamReader
from kafka_eos.offsets import model


class OffsetLogScanError(SourceOptionError):
    """The query's offset log does not say where this scan starts."""


class LegacyKafkaStreamReader(KafkaStreamReader):
    """``KafkaStreamReader`` for Spark's ``latestOffset()`` without start or limit (see module)."""

    def __init__(self, options: dict, schema: StructType, cores: int | None = None) -> None:
        super().__init__(options, schema, cores)
        if self._checkpoint() is None:
            raise SourceOptionError(
                f"{spark_compat.describe()}: the kafka-eos stream needs option checkpointLocation, the same "
                "path as the query's writeStream checkpointLocation, to find where it resumes after a restart "
                "(this pyspark hands a Python source no start). Add .option(\"checkpointLocation\", <path>) to "
                "readStream, or run on pyspark 4.2+")
        self._next_start: dict | None = None

    def _checkpoint(self) -> str | None:
        replay = self.options.replay
        return replay.into if replay is not None else self.options.checkpoint

    def latestOffset(self) -> dict:  # type: ignore[override]  # Spark 4.0/4.1 pass no start, no limit
        end = super().latestOffset(self._start(), self.getDefaultReadLimit())
        self._next_start = end
        return end

    def partitions(self, start: dict, end: dict):
        self._next_start = end  # Spark runs only its newest batch: the next one starts at its end
        return super().partitions(start, end)

    def _start(self) -> dict:
        if self._next_start is None:
            entry = self._newest_entry()
            logged = None if entry is None else own_line(entry.sources, self.options.scan_name, entry.batch_id)
            self._next_start = logged if logged is not None else self.initialOffset()
        return self._next_start

    def _newest_entry(self) -> OffsetEntry | None:
        given = self.options.offset_log_entry
        if given is not None and self.options.replay is None:  # a replay's start is in its own checkpoint
            data = json.loads(given)
            return parse_entry(int(data["batch"]), data.get("text")) if data.get("batch") is not None else None
        return CheckpointReader(str(self._checkpoint())).latest_offsets()


def own_line(lines: Sequence[str], scan: str | None, batch_id: int) -> dict[str, Any]:
    """This scan's end in an offset-log entry's source lines (see module invariants)."""
    ours = [data for data in map(_kafka_eos_offsets, lines) if data is not None]
    if scan:  # its own lines, else lines no scan named (an end planned before the name was given)
        candidates = [d for d in ours if model.scan_of(d) == scan] or [d for d in ours if model.scan_of(d) is None]
    else:
        candidates = ours
    distinct = {json.dumps(data, sort_keys=True) for data in candidates}
    if len(distinct) == 1:
        return candidates[0]
    if not distinct:
        raise OffsetLogScanError(
            f"batch {batch_id} of the offset log holds no kafka-eos line"
            + (f" of scan {scan!r}" if scan else "")
            + ": option checkpointLocation must be this query's own checkpoint (the writeStream's)")
    raise OffsetLogScanError(
        f"batch {batch_id} of the offset log holds {len(distinct)} kafka-eos scans that differ; give each "
        "readStream.format(\"kafka-eos\") of the query its own option scanName (any distinct text) so each "
        "finds its own line")


def _kafka_eos_offsets(line: str) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("v") == model.FORMAT_VERSION and "topics" in data else None
