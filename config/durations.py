"""Durations as people write them in pipeline files: ``500 ms``, ``10 seconds``, ``2min``, ``1 hour``."""
from __future__ import annotations

import re

_UNITS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$")


def parse_duration_ms(value: object) -> int:
    """Milliseconds of ``value`` (a whole number means milliseconds); ValueError if unreadable."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is negative")
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    match = _DURATION.match(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise ValueError(f"{value!r} is not a duration like '500 ms', '10 seconds', '2 minutes' or '1 hour'")
    return int(float(match.group(1)) * _UNITS[unit])
