"""The run supervisor's decisions, with stand-in child processes (pure logic; the real restart
after a killed driver is integration_tests/pipeline/test_status.py)."""
from __future__ import annotations

import signal

import pytest

from kafka_eos.connectors.exit_codes import CODES
from kafka_eos.connectors.pipeline import supervisor as sup
from kafka_eos.connectors.pipeline.supervisor import Supervisor, child_args, pause_s


class Child:
    def __init__(self, code: int, on_wait=None) -> None:
        self.code, self.on_wait, self.signals = code, on_wait, []

    def wait(self) -> int:
        if self.on_wait:
            self.on_wait()
        return self.code

    def poll(self):
        return None

    def send_signal(self, signum: int) -> None:
        self.signals.append(signum)


def name_of(code: int) -> str:
    return next(c.name for c in CODES if c.code == code)


def supervised(codes: list[int], restarts: int, on_wait=None):
    children, lines, started = [Child(c, on_wait) for c in codes], [], []

    def start(args):
        started.append(args)
        return children[len(started) - 1]
    s = Supervisor(["run", "p.yaml"], restarts, lines.append, "p", start=start, pause=lambda n: 0)
    return s, started, lines


def test_a_failed_run_is_restarted_until_one_ends_cleanly():
    s, started, lines = supervised([137, 4, 2, 0], restarts=3)
    assert s.run() == 0 and len(started) == 4
    assert lines == ["kafka-eos p: the run exited with 137; restart 1 of 3 in 0 s",
                     "kafka-eos p: the run exited with 4; restart 2 of 3 in 0 s",
                     "kafka-eos p: the run exited with 2; restart 3 of 3 in 0 s"]


def test_restarts_in_a_row_are_bounded_and_the_last_code_returned():
    s, started, lines = supervised([4, 4, 4, 0], restarts=2)
    assert s.run() == 4 and len(started) == 3
    assert lines[-1] == "kafka-eos p: the run exited with 4; no restart left (2 in a row)"


@pytest.mark.parametrize("code", [1, 3, 5])
def test_a_permanent_exit_is_not_restarted(code):
    """Issue 58: every failure exited 1 and was restarted, a replay mismatch `restarts` times; a
    permanent code (invalid, not authorized, needs an operator) now ends the supervision."""
    s, started, lines = supervised([code, 0], restarts=10)
    assert s.run() == code and len(started) == 1
    assert lines == [f"kafka-eos p: the run exited with {code} ({name_of(code)}); not restarted: every restart "
                     "would stop the same way until a person acts (its error above names the runbook)"]


def test_a_run_that_ran_steadily_resets_the_count(monkeypatch):
    clock = iter([0.0, 1.0, 10.0, 10.0 + sup.STEADY_S, 2000.0, 2001.0, 3000.0, 3001.0])
    monkeypatch.setattr(sup.time, "monotonic", lambda: next(clock))
    s, started, lines = supervised([4, 4, 4, 0], restarts=1)
    assert s.run() == 4 and len(started) == 3, lines   # 4 (restart 1), steady then 4 (restart 1 again), 4: none left
    assert [line.split("; ")[1] for line in lines] == ["restart 1 of 1 in 0 s", "restart 1 of 1 in 0 s",
                                                 "no restart left (1 in a row)"]


def test_a_clean_exit_or_a_stop_signal_is_never_restarted():
    s, started, _ = supervised([0], restarts=5)
    assert s.run() == 0 and len(started) == 1
    s, started, _ = supervised([143, 0], restarts=5, on_wait=lambda: s._forward(signal.SIGTERM, None))
    assert s.run() == 143 and len(started) == 1


def test_the_stop_signal_is_passed_to_the_running_child():
    s, _, _ = supervised([143], restarts=5)
    child = Child(143)
    s.proc = child
    s._forward(signal.SIGTERM, None)
    assert child.signals == [signal.SIGTERM] and s.stopping.is_set()


def test_pauses_double_up_to_a_minute_and_the_child_has_no_restarts_option():
    assert [pause_s(n) for n in (1, 2, 3, 7, 8)] == [1, 2, 4, 60, 60]
    assert child_args(["run", "p.yaml", "--restarts", "3", "--once"]) == ["run", "p.yaml", "--once"]
    assert child_args(["run", "--restarts=3", "p.yaml"]) == ["run", "p.yaml"]
