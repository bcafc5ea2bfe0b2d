"""Which event-time bound Spark's stateful operator compares with the watermark, read from
``transform.sql``: the one owner of "is this source record late".

Spark drops an input row of a stateful operator when the operator's event-time key is at or
behind the watermark for late events (``key <= watermark``). The key is:
- ``window(t, size[, slide[, start]])``: the window's end. A row of a tumbling window has one
  window; a row of sliding windows has several, and it reaches none of them exactly when the end
  of its latest window (``lastStart + size``, ``lastStart`` being the start of its tumbling
  window of length ``slide``) is at or behind the watermark.
- ``session_window(t, gap)``: the end of the row's own session, ``t + gap`` (Spark compares each
  row's session before merging, ``spark.sql.streaming.sessionWindow.merge.sessions.in.local.partition``
  being false by default).
- no window (``SELECT DISTINCT`` / deduplication over the event-time column): ``t`` itself.
A window drops rows whose event time is null, so with a window those are late too.

Only literal durations are read (``'1 minute'``); a query with two different windows, or a
window over another column than the watermark's, has no single answer and is refused.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_eos import KafkaEosError

_LITERAL = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_ARG = rf"({_LITERAL}|[^,()]+)"
_WINDOW = re.compile(rf"(?is)\b(session_window|window)\s*\(\s*([^,()]+?)\s*((?:,\s*{_ARG}\s*)*)\)")
_ARGS = re.compile(rf"(?s),\s*({_LITERAL}|[^,()]+?)\s*(?=,|$)")
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


class LateSpecError(KafkaEosError, ValueError):
    """``transform.sql`` has no single event-time bound for ``late_topic``; the message says why."""


@dataclass(frozen=True)
class LateSpec:
    """How a source row's event-time bound is computed (durations are Spark interval strings)."""
    kind: str                   # "tumbling" | "sliding" | "session" | "event_time"
    size: str | None = None     # window length / session gap
    slide: str | None = None
    start: str | None = None

    @property
    def drops_null_time(self) -> bool:
        return self.kind != "event_time"


def _unquote(text: str, what: str) -> str:
    text = text.strip()
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        raise LateSpecError(f"the {what} {text!r} is not a literal duration; write it as a string, e.g. '1 minute'")
    return text[1:-1]


def _column(text: str) -> str:
    name = text.strip().strip("`")
    return name.split(".")[-1].strip("`")


def _spec(kind: str, args: list[str]) -> LateSpec:
    if kind == "session_window":
        if len(args) != 1:
            raise LateSpecError("session_window takes a time column and one literal gap")
        return LateSpec("session", size=_unquote(args[0], "session gap"))
    if not 1 <= len(args) <= 3:
        raise LateSpecError("window takes a time column, a length, and optionally a slide and a start")
    size = _unquote(args[0], "window length")
    slide = _unquote(args[1], "window slide") if len(args) > 1 else size
    start = _unquote(args[2], "window start") if len(args) > 2 else "0 seconds"
    return LateSpec("tumbling" if slide == size else "sliding", size=size, slide=slide, start=start)


def late_spec(sql: str | None, column: str) -> LateSpec:
    """The event-time bound of ``sql``'s stateful operator over the watermark ``column``."""
    text = _COMMENT.sub(" ", sql or "")
    found = set()
    for match in _WINDOW.finditer(text):
        kind, time_column, rest = match.group(1).lower(), match.group(2), match.group(3) or ""
        if _column(time_column) != column:
            raise LateSpecError(f"{kind}({time_column.strip()}, ...) is not over the watermark column {column!r}")
        found.add(_spec(kind, [a for a in _ARGS.findall(rest)]))
    if len(found) > 1:
        raise LateSpecError(f"the query has {len(found)} different windows; late records are defined for one")
    return found.pop() if found else LateSpec("event_time")
