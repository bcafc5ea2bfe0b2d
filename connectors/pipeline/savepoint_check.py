"""``kafka-eos validate new.yaml --against-savepoint LOCATION``: change by change, what of the saved
pipeline carries over to ``new.yaml`` and what is refused, before anything is started.

Invariants:
- It reads the savepoint and the new file only (and, unless offline, the source's earliest
  offsets and ``retention.ms``); it writes nothing.
- Each line is ``carries over``, ``refused`` (the reason and the way on) or ``check`` (exact only
  under a condition the file cannot show: docs/savepoints.md); exit 1 when a line is refused.
- The refusals are the restore's own (``restore.plan_start``, ``check_replay_fits``), so
  validate and ``run --from-savepoint`` cannot disagree.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.connectors.pipeline.pipeline_shape import shape_of
from kafka_eos.connectors.pipeline.restore import check_replay_fits, plan_start
from kafka_eos.connectors.pipeline.savepoint_plan import window_of
from kafka_eos.offsets.rewind import WindowSpec, open_from
from kafka_eos.txn.log.savepoints import Savepoint, read_savepoint

CARRIES, REFUSED, CHECK = "carries over", "refused", "check"


def _window_text(window: dict[str, Any] | WindowSpec | None) -> str:
    w = asdict(window) if isinstance(window, WindowSpec) else (window or {})
    kind = w.get("kind", "unknown")
    if kind == "tumbling":
        return f"tumbling {w['size_ms']} ms"
    if kind == "sliding":
        return f"sliding {w['size_ms']} ms every {w['slide_ms']} ms"
    return str(kind)


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
    try:
        sp = read_savepoint(location)
    except KafkaEosError as exc:
        return 1, f"{head}\n  {REFUSED}: {exc}"
    window = window_of(cfg)
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
        lines.append((REFUSED, str(exc)))
    code = 1 if any(kind == REFUSED for kind, _ in lines) else 0
    return code, "\n".join([head, *(f"  {kind}: {text}" for kind, text in lines)])
