"""``kafka-eos validate new.yaml --against-savepoint LOCATION``: change by change, what of the saved
pipeline carries over to ``new.yaml`` and what is refused, before anything is started.

Invariants:
- It reads the savepoint and the new file only (and, unless offline, the source's earliest
  offsets and ``retention.ms``); it writes nothing.
- Each line is ``carries over``, ``refused`` (the reason and the way on) or ``check`` (exact only
  under a condition the file cannot show: docs/savepoints.md); exit 1 when a line is refused.
- The refusals are the restore's own (``restore.plan_start``, ``check_replay_fits``), worded by
  ``refusal`` for both, so validate and ``run --from-savepoint`` cannot disagree. State a savepoint
  cannot carry (``offsets.rewind.REFUSALS``) is one refused line, nothing said to carry over; its
  way on holds after a savepoint (the saved checkpoint starts no more): a pipeline the savepoint
  carries, or this one on empty state from where the saved one stopped.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.pipeline.pipeline_shape import shape_of
from kafka_eos.connectors.pipeline.restore import check_replay_fits, plan_start
from kafka_eos.connectors.pipeline.savepoint import register_savepoint
from kafka_eos.connectors.pipeline.savepoint_plan import window_of
from kafka_eos.offsets.rewind import REFUSALS, StateNotRebuildable, WindowSpec, open_from
from kafka_eos.txn.log.savepoints import Savepoint, encode_offsets, read_savepoint

CARRIES, REFUSED, CHECK = "carries over", "refused", "check"


def _window_text(window: dict[str, Any] | WindowSpec | None) -> str:
    w = asdict(window) if isinstance(window, WindowSpec) else (window or {})
    kind = w.get("kind", "unknown")
    if kind == "tumbling":
        return f"tumbling {w['size_ms']} ms"
    if kind == "sliding":
        return f"sliding {w['size_ms']} ms every {w['slide_ms']} ms"
    return str(kind)


def way_on(sp: Savepoint) -> str:
    """What to do instead of a refused restore, once the old checkpoint is saved (it starts no more)."""
    return (f"The saved checkpoint {sp.checkpoint} starts no more (the savepoint retired it). The way on: restore a "
            "pipeline this savepoint carries (stateless, or tumbling or sliding windows over a watermark) with "
            "--from-savepoint, or run this one without it on a new checkpoint.location with "
            "empty state from where the saved pipeline stopped, source.starting_offsets: "
            f"'{json.dumps(encode_offsets(sp.end))}' (none of the saved state is carried; windows and matches open "
            "at the savepoint start over)")


def refusal(cfg: PipelineConfig, sp: Savepoint | None, exc: Exception) -> str:
    """The text of a restore of ``cfg`` from ``sp`` refused by ``exc`` (validate's and run's)."""
    kind = window_of(cfg).kind
    if sp is None or not isinstance(exc, StateNotRebuildable) or kind not in REFUSALS:
        return str(exc)
    return str(StateNotRebuildable(f"a savepoint cannot carry this pipeline's state ({kind}): {REFUSALS[kind]}. "
                                   f"{way_on(sp)}"))


def refusal_at(cfg: PipelineConfig, location: str, exc: Exception) -> str:
    """``refusal`` with the savepoint read from ``location`` (``str(exc)`` when it is unreadable)."""
    register_savepoint(cfg, location)
    try:
        return refusal(cfg, read_savepoint(location), exc)
    except KafkaEosError:
        return str(exc)


def window_lines(sp: Savepoint, new: WindowSpec) -> list[tuple[str, str]]:
    old = _window_text(sp.window)
    if old == _window_text(new):
        return [(CARRIES, f"window: {old}, unchanged")]
    line = f"window: {old} -> {_window_text(new)}"
    if new.kind in ("tumbling", "sliding") and sp.window and sp.window.get("kind") in ("tumbling", "sliding"):
        w0_old = open_from(WindowSpec(**sp.window), sp.watermark_ms)
        w0_new = open_from(new, sp.watermark_ms)
        seam = ("records between them are in a window the old query emitted and in an open new one" if w0_new < w0_old
                else "records between them are only in old windows, which closed" if w0_new > w0_old else "no seam")
        line += f" (windows open from {w0_old} ms -> from {w0_new} ms: {seam})"
    return [(CARRIES, line)]


def shape_lines(sp: Savepoint, cfg: PipelineConfig) -> list[tuple[str, str]]:
    new, old, out = asdict(shape_of(cfg)), sp.shape, []
    if new["transform"] != old.get("transform"):
        out.append((CARRIES, "transform: changed (its state is rebuilt by the replay)"))
        out.append((CHECK, "event-time coverage: the records' times are of the rows that reached the old "
                           "watermark operator; exact when the new transform windows no row the old one filtered "
                           "out (a new column, a changed aggregate, a narrower filter, another window size)"))
    if new["decode"] != old.get("decode"):
        out.append((CHECK, "decoding: changed; exact when every row the new decoding windows decoded before too"))
    if new["dlq_topic"] != old.get("dlq_topic"):
        out.append((CARRIES, f"DLQ: {old.get('dlq_topic')} -> {new['dlq_topic']} (replayed records do not reach "
                             "it again)"))
    if new["sink"] != old.get("sink"):
        out.append((CARRIES, "sink: changed (the new checkpoint has its own sink log and prefix)"))
    return out


def state_lines(sp: Savepoint) -> list[tuple[str, str]]:
    return [(CARRIES, f"state store ({sp.state.get('provider') or 'default'}), shuffle partitions "
                      f"({sp.state.get('shuffle_partitions')}) and pyspark ({sp.pyspark}): the new checkpoint's own "
                      "(its state is rebuilt by the replay)")]


def against(cfg: PipelineConfig, location: str, timeout_s: float = 10.0, offline: bool = False) -> tuple[int, str]:
    """(exit code, text) of ``cfg`` against the savepoint at ``location`` (see module)."""
    head = f"{cfg.origin} against savepoint {location}:"
    register_savepoint(cfg, location)
    try:
        sp = read_savepoint(location)
    except KafkaEosError as exc:
        return 1, f"{head}\n  {REFUSED}: {exc}"
    window = window_of(cfg)
    if window.kind in REFUSALS:  # nothing of its state carries over: one line, the reason and the way on
        text = refusal(cfg, sp, StateNotRebuildable.of_kind(window.kind))
        return 1, f"{head}\n  {REFUSED}: {text}"
    lines = window_lines(sp, window) + shape_lines(sp, cfg) + state_lines(sp)
    try:
        start = plan_start(cfg, sp)
        replay = ("nothing to replay (stateless)" if start.w0_ms is None else
                  f"replay from batch {start.rewind_batch} of the saved pipeline, "
                  f"{sum(start.end[tp] - start.rewind.get(tp, start.end[tp]) for tp in start.end)} records")
        lines.append((CARRIES, f"rewind: {replay}"))
        if not offline:
            check_replay_fits(cfg, start.rewind, start.end, timeout_s)
            lines.append((CARRIES, "retention: Kafka still holds the whole replay"))
    except (KafkaEosError, OSError) as exc:
        lines.append((REFUSED, refusal(cfg, sp, exc)))
    code = 1 if any(kind == REFUSED for kind, _ in lines) else 0
    return code, "\n".join([head, *(f"  {kind}: {text}" for kind, text in lines)])
