"""Refuse, before Spark does, to resume a checkpoint with a plan of another shape.

Spark's offset log (``<checkpoint>/offsets/<batch>``: ``v1``, the batch metadata, then one line
per source) fixes how many source scans the query has. A pipeline with
``errors.on_decode_error: dlq`` scans its source twice (the output branch and the DLQ branch;
Spark does not share a streaming scan between two branches of a union), ``fail`` and ``skip``
once. Switching between ``dlq`` and the others on an existing checkpoint would stop the query
with Spark's "There are [1] sources in the checkpoint offsets and now there are [2]"; this
check says the same in pipeline terms, with the fix, before anything starts.
"""
from __future__ import annotations

from pathlib import Path

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.pipeline.builder import scans_per_batch
from kafka_eos.txn.log_store import LogStore


class CheckpointShapeError(KafkaEosError, ValueError):
    """The checkpoint was written by a plan with another number of source scans."""


def checkpoint_sources(location: str) -> int | None:
    """Source count of the newest offset-log entry at ``location``; None when there is none."""
    offsets = f"{location.rstrip('/')}/offsets"
    if "://" not in offsets and not Path(offsets.removeprefix("file:")).is_dir():
        return None  # a new checkpoint (and no directory is created by looking)
    store = LogStore(offsets)
    batches = sorted((int(n) for n in store.names() if n.isdigit()), reverse=True)
    for batch in batches:
        text = store.read(str(batch))
        if text and text.startswith("v"):
            return max(0, len(text.rstrip("\n").split("\n")) - 2)
    return None


def check_checkpoint(cfg: PipelineConfig) -> None:
    """Raise ``CheckpointShapeError`` when the checkpoint cannot be resumed by this pipeline."""
    location = cfg.checkpoint.location
    found = checkpoint_sources(location) if location else None
    wanted = scans_per_batch(cfg)
    if found is None or found == wanted:
        return
    policy = cfg.errors.on_decode_error.value
    made_with = "dlq" if found == 2 else "fail or skip"
    raise CheckpointShapeError(
        f"errors.on_decode_error: {policy} cannot resume checkpoint {location}, which was written with "
        f"on_decode_error {made_with} ({found} source scan(s) per batch; {policy} needs {wanted}). "
        f"Fix: keep on_decode_error {made_with} for this checkpoint, or start with a new checkpoint.location "
        "(and source.starting_offsets where the old one stopped)")
