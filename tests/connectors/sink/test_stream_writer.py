"""The stream writer's commit hands the protocol the batch's inputs: Spark's offset log file, or None."""
from __future__ import annotations

from kafka_eos.connectors.sink.stream_writer import KafkaEosStreamWriter, SinkCommitMessage
from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.replay import ReplayPlan
from kafka_eos.txn.protocol.sink_config import SinkConfig
from tests.txn.fakes import handle


class Protocol:
    def __init__(self):
        self.commits = []

    def commit_batch(self, batch_id, handles, inputs=None):
        self.commits.append((batch_id, handles, inputs))


def writer(tmp_path, checkpoint) -> KafkaEosStreamWriter:
    config = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                        log_location=str(tmp_path / "log"), checkpoint_location=checkpoint)
    return KafkaEosStreamWriter(config, FaultPlan(), "q", ReplayPlan(), Protocol())


def test_commit_passes_the_text_of_sparks_offset_log_file(tmp_path):
    (tmp_path / "ck" / "offsets").mkdir(parents=True)
    offsets = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"orders":{"0":42}}'
    (tmp_path / "ck" / "offsets" / "5").write_text(offsets)
    w = writer(tmp_path, str(tmp_path / "ck") + "/")
    w.commit([SinkCommitMessage(handle(0).to_dict())], 5)
    w.commit([SinkCommitMessage(handle(0).to_dict())], 6)  # no such file: no inputs, the commit goes on
    assert w._protocol.commits == [(5, [handle(0)], offsets), (6, [handle(0)], None)]
    assert "_offset_log" in w.__dict__ and "_offset_log" not in w.__getstate__()  # the driver's reader stays there


def test_commit_without_a_checkpoint_or_with_an_unreadable_one_has_no_inputs(tmp_path):
    (tmp_path / "ck" / "offsets" / "1").mkdir(parents=True)  # a directory where the file should be
    for checkpoint in (None, str(tmp_path / "ck")):
        w = writer(tmp_path, checkpoint)
        w.commit([SinkCommitMessage(handle(0).to_dict())], 1)
        assert w._protocol.commits == [(1, [handle(0)], None)]


def test_records_in_kafka_never_read_a_checkpoint_at_a_uri_here(tmp_path, monkeypatch):
    """This Python has no credentials for the checkpoint's storage then: pyarrow's GCS client would
    retry a read for about 15 minutes in every commit. A path is still read."""
    from kafka_eos.connectors.sink import stream_writer
    opened: list[str] = []
    monkeypatch.setattr(stream_writer, "open_reader", lambda location: opened.append(location))
    config = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                        log_location="kafka:_kafka_eos_store-p/ck-0123/kafka-eos-sink",
                        checkpoint_location="gs://bucket/ck")
    w = KafkaEosStreamWriter(config, FaultPlan(), "q", ReplayPlan(), Protocol())
    w.commit([SinkCommitMessage(handle(0).to_dict())], 1)
    assert w._protocol.commits == [(1, [handle(0)], None)] and opened == []
