"""The measurement method of the throughput comparison (issue 14.1): settling, spread, ratios.

- ``settle`` waits, at most ``max_wait_s``, until the machine is quiet: CPU busy below
  ``busy_pct`` over a 3 s window and, when ``max_load`` is given, the 1-minute load average
  below it (off by default: it lags a just-finished run of the suite itself by a minute).
- ``summary`` of a configuration's per-round samples: median, min, max, the spread
  (max - min) / median, and ``noisy`` when the spread exceeds ``NOISY_SPREAD``.
- ``round_ratios``: the ratio A / B per round (same round, same input, back to back); the
  reported ratio is the median of those, with their min and max.
"""
from __future__ import annotations

import statistics
import time

import psutil

from bench.common import load_avg

NOISY_SPREAD = 0.15
WINDOW_S = 3.0


def settle(busy_pct: float, max_wait_s: float, max_load: float = 0.0) -> dict:
    """Wait for CPU busy < ``busy_pct`` (and load < ``max_load`` if set; bounded); return what was seen."""
    started = time.monotonic()

    def quiet(busy: float) -> bool:
        return busy < busy_pct and (not max_load or load_avg() < max_load)

    busy = psutil.cpu_percent(interval=WINDOW_S)
    while not quiet(busy) and time.monotonic() - started + WINDOW_S <= max_wait_s:
        busy = psutil.cpu_percent(interval=WINDOW_S)
    return {"waited_s": round(time.monotonic() - started, 1), "cpu_busy_pct": busy,
            "settled": quiet(busy), "load_avg_1m": load_avg()}


def summary(values: list[float]) -> dict:
    """Median, min, max and spread of one configuration's samples (every sample kept)."""
    median = statistics.median(values)
    spread = (max(values) - min(values)) / median if median else 0.0
    return {"median": round(median), "min": round(min(values)), "max": round(max(values)),
            "spread": round(spread, 3), "noisy": spread > NOISY_SPREAD, "samples": [round(v) for v in values]}


def round_ratios(numerators: list[float], denominators: list[float]) -> dict:
    """Per-round ratios and their median, min and max."""
    per_round = [round(a / b, 3) for a, b in zip(numerators, denominators)]
    return {"median": round(statistics.median(per_round), 3), "min": min(per_round), "max": max(per_round),
            "per_round": per_round}


def key_medians(rows: list[dict], missing: float | None = None) -> dict:
    """Median of each key's figures over ``rows``; a row without the key counts as ``missing``, or
    is left out when ``missing`` is None."""
    keys = sorted({k for row in rows for k in row})
    return {k: statistics.median(row.get(k, missing) for row in rows if k in row or missing is not None)
            for k in keys}
