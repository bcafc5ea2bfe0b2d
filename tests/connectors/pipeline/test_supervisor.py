"""The run supervisor's decisions, with stand-in child processes (pure logic; the real restart
after a killed driver is integration_tests/test_supervised_run.py)."""
from __future__ import annotations

import signal

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


def supervised(codes: list[int], restarts: int, on_wait=None):
    children, lines, started = [Child(c, on_wait) for c in codes], [], []

    def start(args):
        started.append(args)
        return children[len(started) - 1]
    s = Supervisor(["run", "p.yaml"], restarts, lines.append, "p", start=start, pause=lambda n: 0)
    return s, started, lines


def test_a_failed_run_is_restarted_until_one_ends_cleanly():
    s, started, lines = supervised([137, 1, 0], restarts=3)
    assert s.run() == 0 and len(started) == 3
    assert lines == ["kafka-eos p: the run exited with 137; restart 1 of 3 in 0 s",
                     "kafka-eos p: the run exited with 1; restart 2 of 3 in 0 s"]


def test_restarts_in_a_row_are_bounded_and_the_last_code_returned():
    s, started, lines = supervised([1, 1, 1, 0], restarts=2)
    assert s.run() == 1 and len(started) == 3
    assert lines[-1] == "kafka-eos p: the run exited with 1; no restart left (2 in a row)"


def test_a_run_that_ran_steadily_resets_the_count(monkeypatch):
    clock = iter([0.0, 1.0, 10.0, 10.0 + sup.STEADY_S, 2000.0, 2001.0, 3000.0, 3001.0])
    monkeypatch.setattr(sup.time, "monotonic", lambda: next(clock))
    s, started, lines = supervised([1, 1, 1, 0], restarts=1)
    assert s.run() == 1 and len(started) == 3, lines   # 1 (restart 1), steady then 1 (restart 1 again), 1: none left
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
