"""Refuse, before Spark does, to resume a checkpoint with a plan of another shape.

Spark's offset log (read through ``checkpoint_log``: one line per source scan in each entry)
fixes how many source scans the query has. A pipeline with
``errors.on_decode_error: dlq`` scans its source twice (the output branch and the DLQ branch;
Spark does not share a streaming scan between two branches of a union), ``fail`` and ``skip``
once. Switching between ``dlq`` and the others on an existing checkpoint would stop the query
with Spark's "There are [1] sources in the checkpoint offsets and now there are [2]"; this
check says the same in pipeline terms, with the fix, before anything starts.
"""
from __future__ import annotations

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.pipeline.builder import scans_per_batch
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader


class CheckpointShapeError(KafkaEosError, ValueError):
    """The checkpoint was written by a plan with another number of source scans."""


def checkpoint_sources(location: str) -> int | None:
    """Source count of the newest offset-log entry at ``location``; None when there is none
    (looking creates nothing)."""
    entry = CheckpointReader(location).latest_offsets()
    return None if entry is None else len(entry.sources)


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
