"""Savepoint records: create-only, versioned, read back equal; the old sink log's mark; the restore record."""
from __future__ import annotations

import json

import pytest

from kafka_eos.txn.log.savepoints import (RECORD, BatchRow, RestoreStart, Savepoint, SavepointConflict,
                                          SavepointUnreadable, decode_offsets, default_location, encode_offsets,
                                          mark_taken, read_restore, read_savepoint, taken, write_restore,
                                          write_savepoint)
from kafka_eos.txn.protocol.errors import SinkLogError


def savepoint(**change) -> Savepoint:
    base = dict(pipeline="p", checkpoint="/ck", sink_log="/ck/kafka-eos-sink", prefix="p-eos", last_batch=4,
                end={("in", 0): 40, ("in", 1): 12}, watermark_ms=90_000, delay_ms=30_000,
                window={"kind": "tumbling", "size_ms": 60_000, "slide_ms": 60_000, "offset_ms": 0},
                shape={"transform": "abc"}, state={"provider": None, "shuffle_partitions": "4"},
                batches=(BatchRow(3, {("in", 0): 20}, 100_000, 80_000, True, "watermark_operator"),
                         BatchRow(4, {("in", 0): 30, ("in", 1): 10})),
                prefix_bound_ms=50_000, pyspark="4.3.0", created_ms=1)
    return Savepoint(**{**base, **change})  # type: ignore[arg-type]


def test_offsets_keep_spark_s_json_form():
    offsets = {("a", 0): 5, ("a", 10): 7, ("b", 2): 1}
    assert encode_offsets(offsets) == {"a": {"0": 5, "10": 7}, "b": {"2": 1}}
    assert decode_offsets(encode_offsets(offsets)) == offsets


def test_a_savepoint_is_created_once_and_read_back_equal(tmp_path):
    location = str(tmp_path / "sp")
    with pytest.raises(SavepointUnreadable, match="no savepoint record there"):
        read_savepoint(location)
    assert not (tmp_path / "sp").exists()  # reading creates nothing
    sp = savepoint()
    assert write_savepoint(location, sp) is True and write_savepoint(location, sp) is False  # the same: kept
    read = read_savepoint(location)
    assert read == sp and read.location == location
    assert read.max_times() == {3: 100_000} and read.starts() == {3: {("in", 0): 20}, 4: {("in", 0): 30, ("in", 1): 10}}
    stored = json.loads((tmp_path / "sp" / RECORD).read_text())
    assert stored["v"] == 1 and stored["end"] == {"in": {"0": 40, "1": 12}}
    with pytest.raises(SavepointConflict, match="other content"):
        write_savepoint(location, savepoint(last_batch=5))
    assert read_savepoint(location) == sp


def test_a_record_of_another_version_is_refused_by_name(tmp_path):
    (tmp_path / "sp").mkdir()
    (tmp_path / "sp" / RECORD).write_text(json.dumps({"v": 2}))
    with pytest.raises(SinkLogError, match="savepoint record format 2 is not 1"):
        read_savepoint(str(tmp_path / "sp"))


def test_the_old_sink_log_is_marked_once(tmp_path):
    log = str(tmp_path / "kafka-eos-sink")
    assert taken(log) is None
    mark = mark_taken(log, default_location(log), 4)
    assert mark.location == default_location(log) and mark.last_batch == 4
    assert mark_taken(log, "/elsewhere", 9) == mark  # the first mark wins
    assert taken(log) == mark


def test_the_restore_record_is_beside_the_new_checkpoint(tmp_path):
    ck = str(tmp_path / "ck2")
    assert read_restore(ck) is None
    start = RestoreStart("/sp", 60_000, 90_000, {("in", 0): 40}, {("in", 0): 20}, 3)
    assert write_restore(ck, start) is True and write_restore(ck, start) is False
    assert read_restore(ck) == start
    with pytest.raises(SavepointConflict):
        write_restore(ck, RestoreStart("/other", 60_000, 90_000, {("in", 0): 40}, {("in", 0): 20}, 3))
