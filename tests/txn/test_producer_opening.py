"""A producer opened in a thread while the task waits: taken once, its error re-raised, and closed
when the task never took it."""
import threading

import pytest

from kafka_eos.txn.producer_opening import ProducerOpening


def test_the_open_runs_while_the_caller_waits_and_is_taken_once():
    started, release = threading.Event(), threading.Event()

    def open_producer():
        started.set()
        release.wait(5)
        return "producer"

    closed: list = []
    opening = ProducerOpening(open_producer, closed.append)
    assert started.wait(5)  # it began before anyone asked for it
    release.set()
    assert opening.result() == "producer"
    opening.discard()
    assert closed == []  # taken: the task owns it
    with pytest.raises(AssertionError):
        opening.result()


def test_an_untaken_producer_is_closed():
    closed: list = []
    opening = ProducerOpening(lambda: "producer", closed.append)
    opening.discard()
    opening.discard()
    assert closed == ["producer"]


def test_a_discard_does_not_wait_for_an_open_under_way_and_closes_it_when_opened():
    release = threading.Event()
    closed: list = []
    opening = ProducerOpening(lambda: release.wait(5) and "producer", closed.append)
    opening.discard()  # an empty task behind a hung coordinator: it ends now
    assert closed == []
    release.set()
    opening._thread.join(5)
    assert closed == ["producer"]


def test_the_open_error_reaches_the_task_and_a_discard_ignores_it():
    def fail():
        raise RuntimeError("init_transactions timed out")

    opening = ProducerOpening(fail, lambda p: pytest.fail("nothing was opened"))
    with pytest.raises(RuntimeError, match="timed out"):
        opening.result()
    opening.discard()
