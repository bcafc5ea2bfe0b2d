"""The sink log on an S3 API (issue 10, point 5): moto's server on loopback, pyarrow's S3 client.

What holds there: ``s3a://`` locations (Hadoop's name, which the docs use) are accepted (mapped to
``s3://`` for pyarrow); records are create-only (a second create of a name raises, never
replaces); a process killed between two writes leaves the first record whole, and recovery
reads it and goes on. Store-level: no Spark here, the committer is a stand-in.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from integration_tests.object_stores import CREDENTIALS, s3_server
from kafka_eos.txn.protocol.errors import SinkLogConflictError, SinkLogError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.log.log_store import LogStore, pyarrow_uri
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_log import DECIDED, BatchRecord, SinkLog, SinkLogReader


@pytest.fixture(scope="module")
def endpoint():
    with s3_server() as address:
        yield address


@pytest.fixture
def location(endpoint, monkeypatch, request):
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    from pyarrow import fs
    bucket = f"ck-{request.node.name.replace('_', '-')[:40].lower()}"
    fs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1",
                    allow_bucket_creation=True).create_dir(bucket)
    return f"s3a://{bucket}/checkpoint/kafka-eos-sink?endpoint_override={endpoint}&scheme=http&region=us-east-1"


def handle(k: int) -> TxnHandle:
    return TxnHandle(sink_partition=k, transactional_id=f"p-{k}-0", producer_id=10 + k, producer_epoch=0, records=4)


def test_s3a_is_mapped_for_pyarrow():
    assert pyarrow_uri("s3a://b/ck") == "s3://b/ck" and pyarrow_uri("s3n://b/ck") == "s3://b/ck"
    assert pyarrow_uri("hdfs://nn/ck") == "hdfs://nn/ck"


def test_records_are_create_only_and_pinned_on_s3(location):
    assert SinkLogReader(location).latest_batch_id() is None
    log = SinkLog(location, "p", "query-1")
    decided = log.append(BatchRecord(3, DECIDED, 2, (handle(0), handle(1)), {0: "pending", 1: "pending"}), None)
    committed = log.append(BatchRecord(3, "committed", 2, decided.handles, {0: "committed", 1: "committed"}), decided)
    assert SinkLogReader(location).get(3) == committed and SinkLogReader(location).latest_batch_id() == 3
    with pytest.raises(SinkLogConflictError, match="took over"):
        log.append(BatchRecord(3, "committed", 2, ()), decided)  # a stale writer: the name is taken
    assert SinkLogReader(location).get(3) == committed
    with pytest.raises(FileExistsError):
        LogStore(location).create("3.0.json", "{}")
    with pytest.raises(SinkLogError, match="belongs to the query query-1"):
        SinkLog(location, "p", "query-2")


_DECIDE_THEN_DIE = """
import os, signal, sys
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.log.sink_log import DECIDED, BatchRecord, SinkLog
handles = tuple(TxnHandle(sink_partition=k, transactional_id=f"p-{k}-0", producer_id=10 + k, producer_epoch=0,
                          records=4) for k in range(3))
SinkLog(sys.argv[1], "p", "query-1").append(BatchRecord(5, DECIDED, 3, handles, {k: "pending" for k in range(3)}), None)
os.kill(os.getpid(), signal.SIGKILL)  # the driver dies between the decision and the commit record
"""


class Committer:
    def __init__(self):
        self.committed = []

    def commit(self, handles):
        self.committed += [h.sink_partition for h in handles]
        return {h.sink_partition: "committed" for h in handles}

    def abort(self, handles):
        return {}


class NoAborter:
    def abort_lingering(self, keep=frozenset()):
        return []


def test_a_driver_killed_after_its_decision_is_recovered_from_s3(location):
    child = subprocess.run([sys.executable, "-c", _DECIDE_THEN_DIE, location], env={**os.environ}, timeout=120)
    assert child.returncode == -signal.SIGKILL
    assert SinkLogReader(location).get(5).state == DECIDED
    committer = Committer()
    protocol = TwoPhaseCommitProtocol(SinkLog(location, "p", "query-1"), committer, NoAborter())
    plan = protocol.recover()
    assert committer.committed == [0, 1, 2] and all(plan.skip(5, k) for k in range(3))
    record = SinkLogReader(location).get(5)
    assert record.state == "committed" and record.seq == 1


def test_a_stop_is_asked_seen_and_cleared_in_an_s3_checkpoint(location, endpoint, monkeypatch):
    """Issue 48: ``kafka-eos stop`` worked for local checkpoints only. The marker now lives in the
    checkpoint's store: placed by ``request_stop``, seen by the run's ``StopControl``, which keeps
    the source's local file in step with it (issue 63: the source's worker reads no URI), removed
    when the stop is honoured."""
    from kafka_eos.connectors.pipeline.stop import StopControl, StopRequested, request_stop, source_marker, withdraw_stop
    from kafka_eos.connectors.source.stop_marker import StopMarker
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")  # as a user's environment names the store:
    checkpoint = location.split("/kafka-eos-sink?")[0]             # the checkpoint is a plain s3a:// URI
    marker, local = StopMarker.of_checkpoint(checkpoint), StopMarker(source_marker(checkpoint, checkpoint))
    lines: list[str] = []
    control = StopControl(checkpoint, lines.append)
    assert not marker.present() and not control.requested() and not local.present()
    placed = request_stop(checkpoint)
    assert placed == f"{checkpoint}/kafka-eos-stop"
    request_stop(checkpoint)  # asked twice: one marker
    assert marker.present() and control.requested() and "stop requested by s3a://" in lines[-1]
    assert local.present(), "the source's local file is placed once the run sees the marker"

    class Idle:
        status = {"isTriggerActive": False}

        def stop(self) -> None:
            self.stopped = True
    assert control.poll(Idle()) and control.stopped == "graceful"
    assert not marker.present() and not local.present(), "removed when the stop was honoured"
    with pytest.raises(StopRequested):  # the request stands in the store: no start runs
        StopControl(checkpoint, lines.append).install()
    assert withdraw_stop(checkpoint) and not marker.present()
    marker.place()  # left by a signal's stop of a run that died: the next run removes it first
    StopControl(checkpoint, lines.append).install().uninstall()
    assert not marker.present() and "left from before this run" in lines[-1]
