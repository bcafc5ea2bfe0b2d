"""The suite's own hooks (root conftest.py, issue 47): the timing summary's arithmetic on fake
reports, and a kind for every integration test module, each kind a registered marker."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import conftest as suite

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Report:
    nodeid: str
    duration: float


REPORTS = [
    Report("tests/test_a.py::test_one", 0.5), Report("tests/test_a.py::test_one", 2.0),  # setup, call
    Report("tests/test_a.py::test_one", 0.25),  # teardown
    Report("tests/test_a.py::test_two", 1.0),
    Report("integration_tests/sink/test_b.py::test_slow[x]", 30.0),
    Report("integration_tests/sink/test_b.py::test_slow[y]", 0.0),
]


def test_a_test_is_the_sum_of_its_phases():
    assert suite.seconds_per_test(REPORTS) == {
        "tests/test_a.py::test_one": 2.75, "tests/test_a.py::test_two": 1.0,
        "integration_tests/sink/test_b.py::test_slow[x]": 30.0, "integration_tests/sink/test_b.py::test_slow[y]": 0.0,
    }


def test_slowest_first_and_at_most_n():
    per_test = suite.seconds_per_test(REPORTS)
    assert suite.slowest(per_test, 2) == [("integration_tests/sink/test_b.py::test_slow[x]", 30.0),
                                          ("tests/test_a.py::test_one", 2.75)]
    assert len(suite.slowest(per_test, 20)) == 4


def test_modules_sum_their_tests_slowest_first():
    assert suite.seconds_per_module(suite.seconds_per_test(REPORTS)) == [
        ("integration_tests/sink/test_b.py", 30.0, 2), ("tests/test_a.py", 3.75, 2)]


def test_summary_sections():
    (slow_title, slow_lines), (module_title, module_lines) = suite.summary(REPORTS, 1)
    assert slow_title == "1 slowest tests (setup + call + teardown)"
    assert slow_lines == ["    30.00s  integration_tests/sink/test_b.py::test_slow[x]"]
    assert module_title == "seconds per test module (4 tests, 33.8s)"
    assert module_lines == ["    30.00s     2 tests  integration_tests/sink/test_b.py",
                            "     3.75s     2 tests  tests/test_a.py"]


def test_no_reports_print_empty_sections():
    assert suite.summary([], 20) == [("20 slowest tests (setup + call + teardown)", []),
                                     ("seconds per test module (0 tests, 0.0s)", [])]


def integration_modules() -> list[str]:
    found = suite.INTEGRATION.rglob("test_*.py")  # the top level and every folder
    return sorted(p.relative_to(suite.INTEGRATION).as_posix() for p in found)


def test_every_integration_module_has_a_kind():
    assert len(integration_modules()) > 50
    assert [m for m in integration_modules() if suite.mapped_kind(m) is None] == []


@pytest.mark.parametrize("module, kind", [
    ("crash/test_sink_crash_matrix.py", "crash"), ("crash/test_secured_crash_matrix.py", "crash"),
    ("broker/test_sink_expired_id.py", "broker"), ("sink/test_sink_writers.py", "sink"),
    ("secured/test_secured_oauth.py", "secured"), ("containers/test_containers_faults.py", "containers"),
    ("chaos/test_chaos.py", "crash"), ("txn/test_broker.py", "txn"),
    ("test_new_thing.py", None), ("jobs/test_new_thing.py", None), ("sink/jobs/test_new_thing.py", None),
])
def test_a_modules_folder_is_its_kind(module, kind):
    assert suite.mapped_kind(module) == kind


def test_every_kind_folder_is_a_package_of_its_tests():
    """Test modules import each other as integration_tests.<kind>.test_...: each kind's folder is a
    package, and no test module is left at the top level (the shared helpers are there)."""
    folders = {pattern.split("/")[0] for patterns in suite.KINDS.values() for pattern in patterns}
    for folder in folders:
        assert (suite.INTEGRATION / folder / "__init__.py").is_file(), folder
    for kind, patterns in suite.KINDS.items():
        if kind != "crash":
            assert patterns == (f"{kind}/test_*.py",)
    assert not list(suite.INTEGRATION.glob("test_*.py"))


def test_every_kind_is_a_registered_marker():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    registered = {line.split(":")[0] for line in markers}
    assert set(suite.KINDS) <= registered
