"""Suite-wide hooks (issue 47): the kind of every integration test module, as a marker of that name
(``make chaos KIND=network`` runs ``-m "chaos and network"``), the run order (``run_order``), and
with ``--timing-summary=N`` where a run's time went: the N slowest tests and the seconds per test module, printed before pytest's
closing line. The per-test seconds file is pytest's own JUnit XML (``--junitxml``, see the Makefile)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from fnmatch import fnmatch
from pathlib import Path
from typing import Protocol

import pytest

INTEGRATION = Path(__file__).resolve().parent / "integration_tests"

# Kind -> the test modules of that kind, as patterns of their path under integration_tests/: each kind
# is a folder there (integration_tests/sink/test_*.py are sink), and the chaos runner's tests
# (chaos/) are crash. Each kind is a marker registered in pyproject.toml. A module matched by none
# (one at the top level, or in a folder of no kind) is "other"; tests/test_test_timing.py fails on
# it, so a new module goes in its kind's folder (a new kind: a folder, a pattern here, a marker).
KINDS: dict[str, tuple[str, ...]] = {
    "network": ("network/test_*.py",),
    "broker": ("broker/test_*.py",),
    "crash": ("crash/test_*.py", "chaos/test_*.py"),
    "secured": ("secured/test_*.py",),
    "containers": ("containers/test_*.py",),
    "pipeline": ("pipeline/test_*.py",),
    "sink": ("sink/test_*.py",),
    "source": ("source/test_*.py",),
    "txn": ("txn/test_*.py",),
    "other": ("other/test_*.py",),
}


def mapped_kind(module: str) -> str | None:
    """The kind of an integration module (its path under integration_tests/), None if unmapped."""
    return next((kind for kind, patterns in KINDS.items() if any(fnmatch(module, p) for p in patterns)), None)


def run_order(items: list[pytest.Item]) -> dict[Path, int]:
    """Per module: 0 if a test of it is marked ``slow`` (minutes), 1 for another integration module, 2
    for a unit test module. With ``make test``'s workers (pytest-xdist, whole modules per worker) the
    longest modules start first and the seconds-long unit tests fill the end, so no worker is left
    with a long tail alone; a module's tests stay together (its module-scoped fixtures start once)."""
    order: dict[Path, int] = {}
    for item in items:
        rank = 0 if item.get_closest_marker("slow") else 1 if item.path.is_relative_to(INTEGRATION) else 2
        order[item.path] = min(rank, order.get(item.path, rank))
    return order


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(INTEGRATION):
            item.add_marker(mapped_kind(item.path.relative_to(INTEGRATION).as_posix()) or "other")
    order = run_order(items)
    items.sort(key=lambda item: order[item.path])  # stable: pytest's order within each group


class Timed(Protocol):
    """What the summary reads of a report: one phase (setup, call or teardown) of one test."""
    nodeid: str
    duration: float


def seconds_per_test(reports: Iterable[Timed]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for report in reports:
        totals[report.nodeid] += report.duration
    return dict(totals)


def slowest(per_test: dict[str, float], n: int) -> list[tuple[str, float]]:
    return sorted(per_test.items(), key=lambda item: item[1], reverse=True)[:n]


def seconds_per_module(per_test: dict[str, float]) -> list[tuple[str, float, int]]:
    """(module, seconds, tests) for each module, slowest first."""
    seconds: dict[str, float] = defaultdict(float)
    tests: dict[str, int] = defaultdict(int)
    for nodeid, s in per_test.items():
        module = nodeid.split("::")[0]
        seconds[module] += s
        tests[module] += 1
    return sorted(((m, seconds[m], tests[m]) for m in seconds), key=lambda row: row[1], reverse=True)


def summary(reports: Iterable[Timed], n: int) -> list[tuple[str, list[str]]]:
    """The printed sections, (title, lines): the n slowest tests, then every module."""
    per_test = seconds_per_test(reports)
    modules = seconds_per_module(per_test)
    return [
        (f"{n} slowest tests (setup + call + teardown)", [f"{s:9.2f}s  {nodeid}" for nodeid, s in slowest(per_test, n)]),
        (f"seconds per test module ({len(per_test)} tests, {sum(per_test.values()):.1f}s)",
         [f"{s:9.2f}s  {count:4d} tests  {module}" for module, s, count in modules]),
    ]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--timing-summary", type=int, default=0, metavar="N",
                     help="print the N slowest tests (setup + call + teardown) and the seconds per test module")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    n: int = config.getoption("timing_summary")
    if n <= 0:
        return
    reports = [r for rs in terminalreporter.stats.values() for r in rs if isinstance(r, pytest.TestReport)]
    for title, lines in summary(reports, n):
        terminalreporter.write_sep("=", title)
        for line in lines:
            terminalreporter.write_line(line)
