"""verify --recompute's driver side without Spark: where a replay can start, and when it cannot run."""
from __future__ import annotations

from kafka_eos.connectors.operate.recompute import replay_batches
from kafka_eos.connectors.operate.recorded_view import plan
from kafka_eos.txn.protocol.sink_config import SinkConfig


def test_a_replay_is_refused_in_a_spark_connect_session_and_says_why():
    config = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                        log_location="/nowhere", topic="t")
    done = replay_batches(object(), lambda extra, scratch: None, "/nowhere", config, [3, 4])
    assert done.sets == {} and set(done.missing) == {3, 4} and "Spark Connect" in done.missing[3]


def test_the_replay_starts_at_the_first_batch_whose_offsets_and_predecessors_spark_still_holds(tmp_path):
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    for batch in (5, 6, 7, 8):
        (offsets / str(batch)).write_text("v1\n{}\n{}")
    found = plan(str(tmp_path), str(tmp_path / "no-sink-log"), [3, 4, 5, 6, 7])
    assert (found.first, found.through, found.needs_view) == (6, 7, False) and set(found.missing) == {3, 4, 5}
    assert "no longer holds batch 4" in found.missing[5] and "minBatchesToRetain" in found.missing[3]
    assert plan(str(tmp_path), str(tmp_path / "no-sink-log"), [0]).first is None
