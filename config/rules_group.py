"""What a group of pipelines run in one application must not share.

Enforced here: two pipelines of one group never share a name (their progress lines and metrics
labels would mix), a checkpoint location (two queries would write one offset log), a sink's
transactional-id prefix (each would fence and abort the other's transactions), or a metrics
endpoint's port (the second could not bind it). Each violation names both files.
"""
from __future__ import annotations

from typing import Callable, Sequence

from kafka_eos.config.model import PipelineConfig, with_derived_prefix
from kafka_eos.config.violations import Violation

_SHARED: tuple[tuple[str, str, Callable[[PipelineConfig], object], str], ...] = (
    ("name", "pipeline name", lambda c: c.name or "kafka-eos", "give each pipeline of the group a name of its own"),
    ("checkpoint.location", "checkpoint location", lambda c: c.checkpoint.location,
     "give each pipeline a checkpoint location of its own"),
    ("sink.transactional_id_prefix", "transactional-id prefix",
     lambda c: with_derived_prefix(c).sink.transactional_id_prefix,
     "give each pipeline a prefix of its own (or leave it unset: it is derived from name and checkpoint)"),
    ("metrics.port", "metrics port", lambda c: c.metrics.port if c.metrics else None,
     "give each pipeline's metrics: a port of its own"),
)


def group_violations(cfgs: Sequence[PipelineConfig]) -> list[Violation]:
    """Every value two pipelines of ``cfgs`` share where they must not (the later file named)."""
    found: list[Violation] = []
    for path, what, value_of, fix in _SHARED:
        seen: dict[object, PipelineConfig] = {}
        for cfg in cfgs:
            value = value_of(cfg)
            if value is None:
                continue
            first = seen.setdefault(value, cfg)
            if first is not cfg:
                found.append(Violation(path, f"the {what} {value!r} is also {first.origin}'s: pipelines of one "
                                       "group run side by side and must not share it", fix, file=cfg.origin))
    return found
