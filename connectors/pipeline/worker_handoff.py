"""What a run hands its query's Python workers from Spark's checkpoint, read in the driver.

pyspark's data source workers (the source's planner, the sink's planner and commit workers) are
Python processes without a JVM: a checkpoint at a URI they could read only through pyarrow, with
credentials of their own. Where this process reads the checkpoint through Spark's Hadoop
(``checkpoint_files.through_hadoop``), ``prepare`` reads what they need before the query starts,
and the builder passes it as options:
1. the query id (sink option ``queryId``): Spark's ``metadata``; a new checkpoint's is written
   first, through Spark's own ``StreamMetadata`` (``spark_compat``), which Spark then takes as the
   query's id, as it takes an existing checkpoint's;
2. where Python sources have no admission control (pyspark 4.0, 4.1), the newest readable
   offset-log entry (source option ``offsetLogEntry``), where the source resumes.
Nothing is handed over for a checkpoint the workers read themselves (a path; a process without
a session's Hadoop): the options are then absent and the workers read it, as without a run.
"""
from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.pipeline import checkpoint_files
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader


@dataclass(frozen=True)
class Handoff:
    query_id: str
    entry: str | None  # offsetLogEntry's JSON (4.0/4.1 only)


_LOCK = threading.Lock()
_PREPARED: dict[str, Handoff] = {}


def prepare(spark: Any, cfg: PipelineConfig) -> Handoff | None:
    """Read (or, for a new checkpoint, write) what the workers need of ``cfg``'s checkpoint."""
    checkpoint = cfg.checkpoint.location
    if not checkpoint:
        return None
    with _LOCK:
        _PREPARED.pop(checkpoint.rstrip("/"), None)
    if not checkpoint_files.use_session(spark) or not checkpoint_files.through_hadoop(checkpoint):
        return None
    reader = CheckpointReader(checkpoint)
    handoff = Handoff(reader.query_id() or _new_query_id(spark, checkpoint),
                      None if spark_compat.ADMISSION_CONTROL else _newest_entry(reader))
    with _LOCK:
        _PREPARED[checkpoint.rstrip("/")] = handoff
    return handoff


def query_id(spark: Any, checkpoint: str) -> str:
    """The query id of ``checkpoint``; a new checkpoint's ``metadata`` is written first (as Spark
    writes it: a checkpoint with an offset log and no metadata is refused at start, 4.3)."""
    return CheckpointReader(checkpoint).query_id() or _new_query_id(spark, checkpoint)


def _new_query_id(spark: Any, checkpoint: str) -> str:
    """Write a new checkpoint's ``metadata`` as Spark would (create-only: a file that appeared
    meanwhile is kept, and read back)."""
    jvm = spark._sc._jvm
    metadata = spark_compat.stream_metadata(jvm)
    conf, root = spark._jsc.hadoopConfiguration(), jvm.org.apache.hadoop.fs.Path(checkpoint.rstrip("/"))
    root.getFileSystem(conf).mkdirs(root)  # as Spark makes a new checkpoint's folder
    try:
        metadata.write(metadata(str(uuid.uuid4())), jvm.org.apache.hadoop.fs.Path(root, "metadata"), conf)
    except Exception:  # noqa: BLE001 - py4j's error of a create that lost to another writer: read it
        pass
    written = CheckpointReader(checkpoint).query_id()
    if written is None:
        raise OSError(f"{checkpoint}/metadata: Spark's query id could not be written or read back")
    return written


def _newest_entry(reader: CheckpointReader) -> str:
    entry = reader.latest_offsets()
    if entry is None:
        return json.dumps({"batch": None})
    text = reader.offset_text(entry.batch_id)
    return json.dumps({"batch": entry.batch_id, "text": text})


def _prepared(cfg: PipelineConfig) -> Handoff | None:
    checkpoint = cfg.checkpoint.location
    with _LOCK:
        return _PREPARED.get(checkpoint.rstrip("/")) if checkpoint else None


def source_options(cfg: PipelineConfig) -> dict[str, str]:
    handoff = _prepared(cfg)
    return {"offsetLogEntry": handoff.entry} if handoff is not None and handoff.entry is not None else {}


def sink_options(cfg: PipelineConfig) -> dict[str, str]:
    handoff = _prepared(cfg)
    return {"queryId": handoff.query_id} if handoff is not None else {}


def forget() -> None:
    """Drop every prepared handoff (tests)."""
    with _LOCK:
        _PREPARED.clear()
