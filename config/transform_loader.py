"""The ``transform`` section of a pipeline YAML: ``sql``, ``steps``, ``watermark`` and
``allow_nondeterministic`` (structure
only; what makes them valid together is ``kafka_eos.config.rules``)."""
from __future__ import annotations

from typing import Any

from kafka_eos.config.model import Step, TransformSpec, Watermark
from kafka_eos.config.sections import Section, did_you_mean
from kafka_eos.config.violations import Violation

STEP_KINDS = ("filter", "select", "key")


def _step(item: Any, path: str, problems: list[Violation]) -> Step | None:
    if not isinstance(item, dict) or len(item) != 1:
        problems.append(Violation(path, f"a step is one 'kind: expression' pair, got {item!r}",
                                  "write e.g. '- filter: amount > 0' or '- select: [id, amount * 2 AS doubled]'"))
        return None
    kind, value = next(iter(item.items()))
    if kind not in STEP_KINDS:
        close = did_you_mean(str(kind), list(STEP_KINDS))
        problems.append(Violation(f"{path}.{kind}", f"unknown step '{kind}'",
                                  f"did you mean '{close}'?" if close else f"use one of: {', '.join(STEP_KINDS)}"))
        return None
    exprs = tuple(str(v) for v in value) if isinstance(value, list) else (str(value),) if value is not None else ()
    if not exprs or (kind != "select" and len(exprs) != 1):
        problems.append(Violation(f"{path}.{kind}", f"'{kind}' needs {'expressions' if kind == 'select' else 'one expression'}",
                                  f"write e.g. '- {kind}: {'[id, amount]' if kind == 'select' else 'amount > 0'}'"))
        return None
    return Step(kind, exprs)


def transform_spec(s: Section) -> TransformSpec:
    raw_steps = s.raw("steps") or []
    if not isinstance(raw_steps, list):
        s.problem(s.at("steps"), "must be a list of steps", "write steps: followed by '- filter: ...' lines")
        raw_steps = []
    steps = [_step(item, f"{s.at('steps')}[{i}]", s.problems) for i, item in enumerate(raw_steps)]
    spec = TransformSpec(sql=s.str("sql"), steps=tuple(x for x in steps if x),
                         watermark=_watermark(s.optional_section("watermark")),
                         allow_nondeterministic=s.bool("allow_nondeterministic", False))
    s.done()
    return spec


def _watermark(s: Section | None) -> Watermark | None:
    if s is None:
        return None
    column, delay, expression = s.str("column"), s.str("delay"), s.str("expression")
    delay_ms, late_topic = s.duration_ms("delay", 0), s.str("late_topic")
    s.done()
    if not column or not delay:
        s.problem(s.path, "a watermark needs a column and a delay",
                  "write watermark: {column: event_time, expression: value.created_at, delay: 10 minutes}")
        return None
    return Watermark(column=column, delay=delay, delay_ms=delay_ms, expression=expression, late_topic=late_topic)
