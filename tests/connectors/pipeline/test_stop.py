"""Graceful stop: idle detection over the checkpoint, the marker, signals, the stop line."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.stop import (MARKER, StopControl, StopNotSupported, StopRequested,
                                                check_no_stop_request, describe_offsets, is_idle, request_stop,
                                                withdraw_stop)
from kafka_eos.connectors.source.stop_marker import REQUEST, StopMarker

HEAD = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n'


def planned(root: Path, batch: int, offsets: str = '{"v": 1, "topics": {"in": {"0": 5, "1": 7}}}') -> None:
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "offsets" / str(batch)).write_text(HEAD + offsets)


def committed(root: Path, batch: int) -> None:
    (root / "commits").mkdir(parents=True, exist_ok=True)
    (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


class Query:
    def __init__(self, active: bool = False) -> None:
        self.status = {"isTriggerActive": active}
        self.stops = 0

    def stop(self) -> None:
        self.stops += 1


def test_idle_only_between_batches_with_the_newest_planned_batch_committed(tmp_path):
    reader = CheckpointReader(str(tmp_path))
    assert is_idle({"isTriggerActive": False}, reader), "a new checkpoint is idle"
    planned(tmp_path, 0)
    assert not is_idle({"isTriggerActive": False}, reader), "batch 0 planned, not committed"
    committed(tmp_path, 0)
    assert is_idle({"isTriggerActive": False}, reader)
    assert not is_idle({"isTriggerActive": True}, reader)
    assert not is_idle({}, reader), "an unknown status is not idle"


def test_the_stop_line_names_the_last_committed_batch_and_its_offsets(tmp_path):
    assert describe_offsets(CheckpointReader(str(tmp_path)))[0] is None
    planned(tmp_path, 2)
    committed(tmp_path, 2)
    planned(tmp_path, 3)
    assert describe_offsets(CheckpointReader(str(tmp_path))) == (2, "in-0:5, in-1:7")


def test_the_marker_stops_an_idle_query_once_and_is_removed(tmp_path):
    lines: list[str] = []
    control = StopControl(str(tmp_path), lines.append).install()
    try:
        query = Query(active=True)
        assert not control.poll(query)
        request_stop(str(tmp_path))
        assert not control.poll(query), "a running batch is not interrupted"
        assert (tmp_path / MARKER).exists()
        query.status["isTriggerActive"] = False
        assert control.poll(query) and query.stops == 1
        assert not (tmp_path / MARKER).exists(), "removed when honoured"
        assert (tmp_path / REQUEST).exists(), "the request stands"
        assert control.stopped == "graceful" and control.exit_code == 0
        assert control.summary("p") == ("kafka-eos p: stopped before any batch committed; the stop request stands "
                                        "until `kafka-eos resume`")
    finally:
        control.uninstall()


def test_a_marker_a_signal_left_is_removed_at_start(tmp_path):
    StopMarker.of_checkpoint(str(tmp_path)).place()  # a run stopped by a signal, killed before it removed it
    lines: list[str] = []
    control = StopControl(str(tmp_path), lines.append).install()
    control.uninstall()
    assert not (tmp_path / MARKER).exists() and "removing a stop marker" in lines[0]
    assert not control.requested()


def test_a_stop_request_refuses_every_start_until_it_is_withdrawn(tmp_path):
    """Issue 58: the request outlived no start (the marker found at start was deleted), so a
    supervisor's restart undid `kafka-eos stop`. Now every start is refused until `resume`."""
    request_stop(str(tmp_path))
    for _ in range(3):  # automatic restarts
        with pytest.raises(StopRequested, match="kafka-eos resume"):
            StopControl(str(tmp_path), [].append).install()
        with pytest.raises(StopRequested, match="at 20"):  # when it was asked
            check_no_stop_request(str(tmp_path))
    assert (tmp_path / MARKER).exists() and (tmp_path / REQUEST).exists(), "a refused start removes nothing"
    assert withdraw_stop(str(tmp_path)) is True
    assert not (tmp_path / MARKER).exists() and not (tmp_path / REQUEST).exists()
    check_no_stop_request(str(tmp_path))
    StopControl(str(tmp_path), [].append).install().uninstall()
    assert withdraw_stop(str(tmp_path)) is False, "nothing stood"


def test_first_signal_waits_for_the_batch_second_stops_at_once(tmp_path):
    lines: list[str] = []
    before = signal.getsignal(signal.SIGTERM)
    control = StopControl(str(tmp_path), lines.append).install()
    try:
        query = Query(active=True)
        os.kill(os.getpid(), signal.SIGTERM)
        assert not control.poll(query) and "stop requested" in lines[-1]
        os.kill(os.getpid(), signal.SIGTERM)
        assert control.poll(query) and control.stopped == "forced" and "at once" in lines[-1]
        assert control.exit_code == 143, "a signal's stop: 128 + SIGTERM, so a platform starts it again"
    finally:
        control.uninstall()
    assert signal.getsignal(signal.SIGTERM) is before, "handlers restored"
    assert not (tmp_path / REQUEST).exists(), "a signal places no stop request"


def test_a_store_pyarrow_cannot_open_names_the_signal_instead():
    with pytest.raises(StopNotSupported, match="SIGTERM"):
        request_stop("nosuchfs://bucket/checkpoints/p")
    assert not StopMarker.of_checkpoint("nosuchfs://bucket/checkpoints/p").present()


def test_a_file_uri_checkpoint_gets_its_marker_in_the_same_folder(tmp_path):
    assert request_stop(f"file://{tmp_path}/") == f"file://{tmp_path}/{MARKER}"
    assert (tmp_path / MARKER).read_text() == "stop\n"
    request_stop(f"file://{tmp_path}")  # asked twice: the marker is kept
    assert StopMarker.of_checkpoint(str(tmp_path)).present()


def test_the_source_reads_the_marker_itself_where_that_is_a_local_file(tmp_path):
    from kafka_eos.connectors.pipeline.stop import source_marker
    assert source_marker("s3a://bucket/c", str(tmp_path)) == f"{tmp_path}/{MARKER}"
    assert source_marker("s3a://bucket/c", f"file://{tmp_path}") == f"file://{tmp_path}/{MARKER}"


@pytest.mark.parametrize("home", ["s3a://bucket/c", "hdfs://nn:8020/c", "kafka:_kafka_eos_store-p/ck-0123456789abcdef"])
def test_elsewhere_the_source_reads_a_local_file_of_this_run(home):
    """The records in Kafka, a checkpoint at a URI: the source's planner (a worker beside the driver,
    with no store clients or credentials) reads a local file the run keeps in step."""
    import tempfile
    from kafka_eos.connectors.pipeline.stop import source_marker
    from kafka_eos.txn.log.log_store import local_path
    local = source_marker("hdfs://nn:8020/c", home)
    assert local_path(local) is not None and local.startswith(tempfile.gettempdir())
    assert f"-{os.getpid()}-" in local, "one run's file: another process's run has its own"
    assert source_marker("hdfs://nn:8020/d", home) != local, "one file per checkpoint"


def test_the_run_keeps_the_sources_file_in_step_with_the_marker(tmp_path, monkeypatch):
    from kafka_eos.connectors.pipeline import stop
    mirror = tmp_path / "mirror"
    monkeypatch.setattr(stop, "source_marker", lambda checkpoint, home: str(mirror))
    mirror.write_text("stop\n")  # left by a run of an earlier process with this pid
    control = StopControl(str(tmp_path), [].append).install()
    try:
        assert not mirror.exists(), "removed at the start"
        query = Query(active=True)
        request_stop(str(tmp_path))  # kafka-eos stop from another process: the marker only
        assert not control.poll(query) and mirror.exists(), "placed once the marker is seen"
        query.status["isTriggerActive"] = False
        assert control.poll(query) and not mirror.exists() and not (tmp_path / MARKER).exists()
    finally:
        control.uninstall()
    control = StopControl(str(tmp_path / "b"), [].append).install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert not control.poll(Query(active=True)) and mirror.exists(), "a signal places it too"
    finally:
        control.uninstall()
    assert not mirror.exists(), "the run's end removes it"


def test_a_signal_places_the_marker_so_the_source_plans_no_new_batch(tmp_path):
    lines: list[str] = []
    control = StopControl(str(tmp_path), lines.append).install()
    try:
        query = Query(active=True)
        os.kill(os.getpid(), signal.SIGTERM)
        assert not control.poll(query) and (tmp_path / MARKER).exists()
        query.status["isTriggerActive"] = False
        assert control.poll(query) and control.stopped == "graceful"
        assert not (tmp_path / MARKER).exists(), "removed when honoured"
    finally:
        control.uninstall()


def test_a_run_ending_by_itself_after_a_stop_request_removes_the_marker(tmp_path):
    """Under --once a source planning nothing ends the query before a poll honours the stop."""
    control = StopControl(str(tmp_path), [].append).install()
    request_stop(str(tmp_path))
    assert control.requested()
    control.uninstall()
    assert not (tmp_path / MARKER).exists()
