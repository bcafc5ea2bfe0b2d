"""Read what is available now, then stop: Trigger.AvailableNow where pyspark can carry it, a drain
to the same end where it cannot.

On pyspark 4.0/4.1 Spark wraps a Python source for Trigger.AvailableNow and asks it for its end
once, so a query would read one batch (at most ``maxOffsetsPerTrigger``) and stop with the rest
unread. There the query drains instead (``spark_compat.available_now_drains``):
1. ``prepare``: the end offsets are taken once, before the query starts
   (``source.start.available_now_target``: what ``prepareForTriggerAvailableNow`` takes on 4.2+),
   and every scan gets the same ones as its option ``availableNowTarget``, past which it never plans;
2. ``trigger``: batches back to back (processing time 0), each within ``maxOffsetsPerTrigger``;
3. ``await_end``: the query is stopped after the first trigger that planned no batch (a progress
   without ``addBatch``): every batch up to the target committed, and the no-data batches Spark
   runs for a watermark ran first, as availableNow ends. Spark reports such an idle trigger every
   ``spark.sql.streaming.noDataProgressEventInterval``, which ``prepare`` sets to ``IDLE_PROGRESS_MS``.
Where pyspark has admission control the three are availableNow itself: options unchanged,
``{"availableNow": True}``, ``awaitTermination``.

For a query built in code: ``kafka_eos.connectors.available_now_options`` / ``available_now_trigger``
/ ``await_available_now`` are these three.
"""
from __future__ import annotations

import time
from typing import Mapping

from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors import spark_compat
from kafka_eos.connectors.source.start import available_now_target

IDLE_PROGRESS_MS = 200
POLL_S = 0.1
_IDLE_PROGRESS = "spark.sql.streaming.noDataProgressEventInterval"


def asked(cfg: PipelineConfig, once: bool) -> bool:
    """Whether a pipeline's run reads what is available at its start, then stops (``--once`` or
    ``trigger: available_now``)."""
    return once or cfg.checkpoint.trigger.available_now


def drains() -> bool:
    """Whether reading what is available now is a drain on this pyspark (see module)."""
    return spark_compat.available_now_drains()


def prepare(spark, source_options: Mapping[str, str]) -> dict[str, str]:
    """Step 1, before the query starts: the source options with the target (``drains`` only)."""
    if not drains():
        return dict(source_options)
    spark.conf.set(_IDLE_PROGRESS, f"{IDLE_PROGRESS_MS}ms")
    return {**source_options, **available_now_target(source_options)}


def trigger() -> dict:
    """Step 2: ``DataStreamWriter.trigger`` keyword arguments."""
    return {"processingTime": "0 seconds"} if drains() else {"availableNow": True}


def drained(query) -> bool:
    """The newest trigger planned no batch."""
    progress = query.lastProgress
    return progress is not None and "addBatch" not in (progress.durationMs or {})


def await_end(query, timeout_s: float | None = None) -> bool:
    """Step 3: wait until the query read what was available at its start (then stop it, draining);
    False if ``timeout_s`` passed first. A failed query raises as ``awaitTermination`` does."""
    if not drains():
        if timeout_s is None:
            query.awaitTermination()
            return True
        return bool(query.awaitTermination(timeout_s))
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not query.awaitTermination(POLL_S):
        if drained(query):
            query.stop()
            return True
        if deadline is not None and time.monotonic() > deadline:
            return False
    return True
