"""The savepoint's wait for the running run to stop (``savepoint._running_stopped``), on a clock of
the test's: "no run was running" only once the checkpoint stayed idle QUIET_S on end with the
marker in place, never while a live run is between batches and still plans the no-data batch its
watermark needs (a savepoint read then would miss that batch's windows: the new query emits them
again)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

import pytest

from kafka_eos.connectors.pipeline import savepoint
from kafka_eos.connectors.pipeline.savepoint import RunDidNotStop, take
from tests.connectors.pipeline.test_savepoint_plan import MINUTE, stopped_pipeline, write_batch


class Clock:
    """``time.monotonic``/``time.sleep`` of the test: a sleep runs the events due by its end."""

    def __init__(self, events: list[tuple[float, Callable[[], None]]]) -> None:
        self.now, self.events = 0.0, sorted(events, key=lambda e: e[0])

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        while self.events and self.events[0][0] <= self.now:
            self.events.pop(0)[1]()


def test_a_run_between_batches_is_waited_for_and_its_no_data_batch_saved(tmp_path, monkeypatch):
    cfg = stopped_pipeline(tmp_path)  # batches 0-3 committed
    ck = tmp_path / "ckpt"
    write_batch(ck, 4, 50, 4 * MINUTE, committed=False)  # the running batch, long (a loaded driver)
    clock = Clock([
        (1.5, lambda: write_batch(ck, 4, 50, 4 * MINUTE)),                      # it commits after QUIET_S
        (1.9, lambda: write_batch(ck, 5, 50, 5 * MINUTE, committed=False)),     # the no-data batch (watermark)
        (2.3, lambda: write_batch(ck, 5, 50, 5 * MINUTE)),
        (2.7, lambda: (ck / "kafka-eos-stop").unlink()),                        # the run saw the marker: stopped
    ])
    monkeypatch.setattr(savepoint, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    monkeypatch.setattr(savepoint, "QUIET_S", 1.0)
    monkeypatch.setattr(savepoint, "POLL_S", 0.1)
    lines: list[str] = []
    done = take(cfg, None, "4.3.0", lines.append)
    assert "the run stopped" in lines[-1], lines
    assert done.savepoint.last_batch == 5 and done.savepoint.watermark_ms == 5 * MINUTE


def test_no_run_is_concluded_after_quiet_s_of_idle_checkpoint(tmp_path, monkeypatch):
    cfg = stopped_pipeline(tmp_path)
    clock = Clock([])
    monkeypatch.setattr(savepoint, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    monkeypatch.setattr(savepoint, "QUIET_S", 1.0)
    monkeypatch.setattr(savepoint, "POLL_S", 0.1)
    lines: list[str] = []
    done = take(cfg, None, "4.3.0", lines.append)
    assert "no run was running" in lines[-1] and done.savepoint.last_batch == 3
    assert 1.0 <= clock.now <= 1.3 and (tmp_path / "ckpt" / "kafka-eos-stop").exists()


def test_a_batch_no_run_commits_saves_nothing_and_says_the_way_on(tmp_path, monkeypatch):
    cfg = stopped_pipeline(tmp_path)
    write_batch(tmp_path / "ckpt", 4, 50, 4 * MINUTE, committed=False)  # its driver died
    clock = Clock([])
    monkeypatch.setattr(savepoint, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    with pytest.raises(RunDidNotStop) as failed:
        take(cfg, None, "4.3.0", lambda _: None, wait_s=20.0)
    text = str(failed.value)
    assert "batch 4 is planned and not committed" in text and "nothing was saved" in text, text
    assert "`kafka-eos resume` and `kafka-eos run --once`" in text, text
    assert not (tmp_path / "ckpt" / "kafka-eos-sink" / "_savepoint").exists()
