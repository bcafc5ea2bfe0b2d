"""The sink log: create-only, versioned batch records bound to a prefix and a query; readers create nothing."""
from __future__ import annotations

import json

import pytest

from kafka_eos.txn.protocol.errors import SinkLogError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, LOST, BatchRecord, SinkLog, SinkLogReader
from kafka_eos.txn.protocol.states import BatchState, PartitionState
from tests.txn.fakes import append_path, handle


def test_sink_log_round_trip_prefix_pin_and_version(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    record = log.append(BatchRecord(4, DECIDED, 2, (handle(0), handle(1)), {0: "pending", 1: "pending"}), None)
    assert log.get(4) == record and log.latest() == record
    with pytest.raises(SinkLogError, match="belongs to transactional.id.prefix 'p'"):
        SinkLog(str(tmp_path), "other")
    data = json.loads((tmp_path / "4.0.json").read_text())
    (tmp_path / "4.0.json").unlink()
    (tmp_path / "4.0.json").write_text(json.dumps({**data, "v": 9}))
    with pytest.raises(SinkLogError, match="format 9"):
        log.get(4)


def test_sink_log_prune_keeps_the_latest_and_drops_what_is_past_the_retention(tmp_path):
    log = SinkLog(str(tmp_path), "p", retention_ms=0)
    for b in range(10):
        append_path(log, BatchRecord(b, DECIDED, 0, ()), BatchRecord(b, COMMITTED, 0, (), metrics={"committed_at_ms": b}))
    log.prune(keep=3, now_ms=100)
    assert log.batch_ids() == [7, 8, 9]
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["7.0.json", "7.1.json", "8.0.json", "8.1.json",
                                                              "9.0.json", "9.1.json", "_meta.json"]


def test_a_batch_older_than_the_newest_100_stays_readable(tmp_path):
    """The old prune deleted every batch behind the newest 100 at once; now they stay (7 days)."""
    log = SinkLog(str(tmp_path), "p")
    for b in range(130):
        append_path(log, BatchRecord(b, DECIDED, 1, (handle(0),), {0: "pending"}),
                    BatchRecord(b, COMMITTED, 1, (handle(0),), {0: "committed"}, {"committed_at_ms": 1e12 + b}))
        log.prune(now_ms=1e12 + b)
    reader = SinkLogReader(str(tmp_path))
    assert reader.batch_ids() == list(range(130))
    assert reader.get(0).state == COMMITTED and reader.get(0).handles == (handle(0),)


def test_inputs_round_trip_written_only_when_set(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    offsets = 'v1\n{"batchWatermarkMs":0}\n{"kafka-eos":{"t":{"0":42}}}'
    with_inputs = log.append(BatchRecord(1, DECIDED, 1, (handle(0),), {0: "pending"}, inputs=offsets), None)
    without = log.append(BatchRecord(2, DECIDED, 1, (handle(0),), {0: "pending"}), None)
    assert json.loads((tmp_path / "1.0.json").read_text())["inputs"] == offsets
    assert "inputs" not in json.loads((tmp_path / "2.0.json").read_text())  # older builds' records look the same
    reader = SinkLogReader(str(tmp_path))
    assert reader.get(1) == with_inputs and reader.get(1).inputs == offsets
    assert reader.get(2) == without and reader.get(2).inputs is None
    assert with_inputs.with_status({0: PartitionState.COMMITTED}).inputs == offsets


def test_durable_partitions_include_empty_and_committed():
    record = BatchRecord(1, DECIDED, 4, (handle(0), TxnHandle.empty(1), handle(2), handle(3)),
                         {0: "committed", 2: LOST, 3: "pending"})
    assert record.durable_partitions() == {0, 1}


def test_sink_log_is_pinned_to_the_checkpoint_query_and_refuses_the_old_format(tmp_path):
    SinkLog(str(tmp_path / "a"), "p", "query-1")
    SinkLog(str(tmp_path / "a"), "p", "query-1")
    with pytest.raises(SinkLogError, match="belongs to the query query-1.*sinkLogLocation"):
        SinkLog(str(tmp_path / "a"), "p", "query-2")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "_meta.json").write_text(json.dumps({"v": 1, "prefix": "p"}))
    with pytest.raises(SinkLogError, match="format 1 is not 2"):
        SinkLog(str(tmp_path / "old"), "p", "query-1")


def test_reader_creates_nothing(tmp_path):
    reader = SinkLogReader(str(tmp_path / "none"))
    assert reader.latest_batch_id() is None and reader.get(0) is None and reader.meta() is None
    assert not (tmp_path / "none").exists()


def test_readers_have_no_writing_methods_and_create_nothing(tmp_path):
    from kafka_eos.connectors.sink.query_start import checkpoint_query_id
    reader = SinkLogReader(str(tmp_path / "none"))
    assert not hasattr(reader.store, "create") and not hasattr(reader.store, "delete")
    assert checkpoint_query_id({"checkpointLocation": str(tmp_path / "ck")}) is None
    assert not (tmp_path / "none").exists() and not (tmp_path / "ck").exists()


_FORMAT_2 = """{
 "v": 2,
 "batch": 3,
 "seq": 1,
 "state": "decided",
 "num_partitions": 2,
 "handles": [
  {
   "v": 1,
   "sink_partition": 0,
   "transactional_id": "p-0-0",
   "producer_id": 100,
   "producer_epoch": 0,
   "records": 5,
   "partitions": {},
   "precommit_ms": 0.0,
   "skipped": false
  }
 ],
 "status": {
  "0": "lost",
  "1": "committed"
 },
 "metrics": {}
}"""


def test_a_format_2_record_reads_as_commit_states_and_writes_back_byte_for_byte():
    record = BatchRecord.from_json(_FORMAT_2, "3.1.json")
    assert record.state is BatchState.DECIDED
    assert record.status == {0: PartitionState.LOST, 1: PartitionState.COMMITTED}
    assert record.status[1] is PartitionState.COMMITTED
    assert record.to_json() == _FORMAT_2
    with pytest.raises(SinkLogError, match="'halfway' is not a valid BatchState"):
        BatchRecord.from_json(_FORMAT_2.replace('"decided"', '"halfway"'), "3.1.json")
    with pytest.raises(SinkLogError, match="'gone' is not a valid PartitionState"):
        BatchRecord.from_json(_FORMAT_2.replace('"lost"', '"gone"'), "3.1.json")
