"""Segments of the sink log: old committed batches rolled 1,000 (here: 10) to a create-only gzip file,
read back through ``SinkLogReader``, deleted past the evidence retention."""
from __future__ import annotations

import gzip
import json

import pytest

from kafka_eos.txn.log import sink_log_segments
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog, SinkLogReader
from kafka_eos.txn.log.sink_log_segments import SEGMENTS_DIR, Segment, SegmentReader, parse_name
from tests.txn.fakes import append_path, handle

KEEP = 5
DAY = 24 * 3600 * 1000


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    monkeypatch.setattr(sink_log_segments, "SEGMENT_BATCHES", 10)


def commit(log: SinkLog, batch_id: int, at_ms: float, inputs: str | None = None) -> BatchRecord:
    return append_path(log, BatchRecord(batch_id, DECIDED, 2, (handle(0), handle(1)), {0: "pending", 1: "pending"},
                                        inputs=inputs),
                       BatchRecord(batch_id, COMMITTED, 2, (handle(0), handle(1)), {0: "committed", 1: "committed"},
                                   {"records": 10.0, "committed_at_ms": at_ms}, inputs=inputs))


def run(log: SinkLog, batches: range, at=lambda b: 1_000.0 * b, now_ms: float | None = None) -> dict[int, BatchRecord]:
    """Commit ``batches`` (batch b at ``at(b)``), pruning after each as the protocol does."""
    written = {}
    for b in batches:
        written[b] = commit(log, b, at(b), inputs=f"offsets of {b}")
        log.prune(keep=KEEP, now_ms=at(b) if now_ms is None else now_ms)
    return written


def segment_names(tmp_path) -> list[str]:
    folder = tmp_path / SEGMENTS_DIR
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def loose_batches(tmp_path) -> list[int]:
    return sorted({int(p.name.split(".")[0]) for p in tmp_path.glob("[0-9]*.json")})


def test_old_committed_batches_are_rolled_into_segments_and_read_back(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    written = run(log, range(27))
    assert segment_names(tmp_path) == ["000000000000-000000000009.json.gz", "000000000010-000000000019.json.gz"]
    assert loose_batches(tmp_path) == list(range(20, 27))  # the newest KEEP and what is not a whole segment yet
    reader = SinkLogReader(str(tmp_path))
    assert reader.batch_ids() == list(range(27)) and reader.latest_batch_id() == 26
    for b in (3, 15, 4, 26, 9, 10):  # across both segments and the loose files
        assert reader.get(b) == written[b]
    assert reader.get(3).inputs == "offsets of 3" and reader.latest() == written[26]
    assert reader.get(27) is None and log.get(12) == written[12]
    assert set(log._final) == set(range(20, 27))  # memory: only what is not rolled


def test_a_segment_is_gzip_of_compact_versioned_json(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    written = run(log, range(16))
    data = (tmp_path / SEGMENTS_DIR / "000000000000-000000000009.json.gz").read_bytes()
    text = gzip.decompress(data).decode()
    body = json.loads(text)
    assert (body["v"], body["first"], body["last"]) == (1, 0, 9) and ": " not in text and "\n" not in text
    assert [r["batch"] for r in body["records"]] == list(range(10))
    assert body["records"][4] == written[4].to_dict() and body["records"][4]["state"] == "committed"
    assert parse_name("000000000000-000000000009.json.gz") == Segment(0, 9) and parse_name("0-9.json.gz") is None


def test_batch_ids_come_from_segment_names_without_reading_them(tmp_path, monkeypatch):
    run(SinkLog(str(tmp_path), "p"), range(16))
    monkeypatch.setattr(SegmentReader, "records", lambda self, segment: pytest.fail("read a segment"))
    assert SinkLogReader(str(tmp_path)).batch_ids() == list(range(16))


def test_only_committed_batches_are_rolled(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    run(log, range(3))
    log.append(BatchRecord(3, DECIDED, 1, (handle(0),), {0: "pending"}), None)  # left decided (a hand-made log)
    run(log, range(4, 30))
    assert segment_names(tmp_path) == [] and loose_batches(tmp_path) == list(range(30))
    assert SinkLogReader(str(tmp_path)).get(3).state == DECIDED


def test_retention_deletes_only_segments_older_than_it(tmp_path):
    log = SinkLog(str(tmp_path), "p", retention_ms=15_000)
    run(log, range(27), now_ms=0)  # nothing expired yet: segments 0-9 and 10-19
    assert len(segment_names(tmp_path)) == 2
    again = SinkLog(str(tmp_path), "p", retention_ms=15_000)  # a restart: reads the oldest segment's time
    again.prune(keep=KEEP, now_ms=19_500)  # cutoff 4,500: segment 0-9 (newest 9,000) stays
    assert len(segment_names(tmp_path)) == 2
    again.prune(keep=KEEP, now_ms=24_500)  # cutoff 9,500: 0-9 is older, 10-19 (newest 19,000) is not
    assert segment_names(tmp_path) == ["000000000010-000000000019.json.gz"]
    reader = SinkLogReader(str(tmp_path))
    assert reader.batch_ids() == list(range(10, 27)) and reader.get(5) is None and reader.get(10).batch_id == 10


def test_retention_drops_old_loose_batches_of_a_slow_pipeline(tmp_path):
    log = SinkLog(str(tmp_path), "p", retention_ms=DAY)
    run(log, range(8), at=lambda b: b * DAY / 4, now_ms=0)  # 4 batches a day, fewer than a segment
    assert loose_batches(tmp_path) == list(range(8))
    log.prune(keep=KEEP, now_ms=2 * DAY + 1)  # batches 0-3 are older than a day; 3-7 are the newest KEEP
    assert loose_batches(tmp_path) == list(range(3, 8)) and segment_names(tmp_path) == []


def test_a_batch_without_commit_time_is_rolled_not_dropped(tmp_path):
    """A batch whose loss an operator accepted has no committed_at_ms: it stays evidence."""
    log = SinkLog(str(tmp_path), "p", retention_ms=DAY)
    run(log, range(2), now_ms=DAY + 1_500)
    append_path(log, BatchRecord(2, DECIDED, 1, (handle(0),), {0: "pending"}),
                BatchRecord(2, COMMITTED, 1, (handle(0),), {0: "lost"}, {"accepted_lost_records": 5.0}))
    run(log, range(3, 20), now_ms=DAY + 1_500)  # 0 and 1 are past the retention; 2 stops the drops
    assert segment_names(tmp_path) == ["000000000002-000000000011.json.gz"]
    assert SinkLogReader(str(tmp_path)).get(2).metrics == {"accepted_lost_records": 5.0}


def test_a_restart_rolls_what_another_writer_wrote(tmp_path):
    first = SinkLog(str(tmp_path), "p")
    written = {b: commit(first, b, 1_000.0 * b) for b in range(25)}  # never pruned: a crash after each commit
    second = SinkLog(str(tmp_path), "p")
    assert second._final == {}
    second.prune(keep=KEEP, now_ms=25_000)
    assert segment_names(tmp_path) == ["000000000000-000000000009.json.gz", "000000000010-000000000019.json.gz"]
    assert [SinkLogReader(str(tmp_path)).get(b) for b in range(25)] == [written[b] for b in range(25)]
    assert not set(second._final) & set(range(20))  # what it read to roll is not kept after the roll


def test_a_crash_between_the_segment_and_the_deletes_leaves_copies_the_next_prune_deletes(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    run(log, range(16))
    record = SinkLogReader(str(tmp_path)).get(3)
    (tmp_path / "3.0.json").write_text(record.to_json())  # as if the deletes had not run
    (tmp_path / "3.1.json").write_text(record.to_json())
    assert SinkLogReader(str(tmp_path)).get(3) == record
    SinkLog(str(tmp_path), "p").prune(keep=KEEP, now_ms=16_000)
    assert 3 not in loose_batches(tmp_path) and SinkLogReader(str(tmp_path)).get(3) == record


def test_a_reader_finds_a_batch_rolled_after_it_listed_the_loose_files(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    written = run(log, range(14))
    reader = SinkLogReader(str(tmp_path))
    listed = reader._records()
    run(log, range(14, 16))  # rolls 0-9 meanwhile
    reader._records = lambda: listed  # type: ignore[method-assign]  # the listing before the roll
    assert reader.get(2) == written[2]


def test_the_segment_folder_is_created_only_by_a_roll(tmp_path):
    log = SinkLog(str(tmp_path), "p")
    run(log, range(12))
    assert not (tmp_path / SEGMENTS_DIR).exists()
    assert SinkLogReader(str(tmp_path / "none")).batch_ids() == [] and not (tmp_path / "none").exists()


def test_a_rolls_deletes_are_spread_over_the_next_prunes(tmp_path, monkeypatch):
    monkeypatch.setattr(sink_log_segments, "ROLLED_DELETES", 4)
    log = SinkLog(str(tmp_path), "p")
    written = run(log, range(15))  # the roll of 0-9 at batch 14
    assert len(segment_names(tmp_path)) == 1 and loose_batches(tmp_path) == list(range(15))
    assert not set(log._final) & set(range(10))  # rolled: no longer in memory
    run(log, range(15, 17))
    assert loose_batches(tmp_path) == list(range(8, 17))  # 4 a prune, oldest first
    assert [SinkLogReader(str(tmp_path)).get(b) for b in range(17)] == [written.get(b) or log.get(b) for b in range(17)]
    run(log, range(17, 19))
    assert loose_batches(tmp_path) == list(range(10, 19))


def test_a_new_batch_costs_no_segment_listing(tmp_path, monkeypatch):
    log = SinkLog(str(tmp_path), "p")
    run(log, range(16))
    monkeypatch.setattr(SegmentReader, "segments", lambda self: pytest.fail("listed the segments"))
    assert log.get(16) is None and log.get(12).batch_id == 12 and log.latest_batch_id() == 15


def test_a_scan_of_rolled_batches_lists_nothing_per_batch(tmp_path, monkeypatch):
    written = run(SinkLog(str(tmp_path), "p"), range(27))
    reader = SinkLogReader(str(tmp_path))
    assert reader.get(0) == written[0]  # decodes segment 0-9
    monkeypatch.setattr(SinkLogReader, "_records", lambda self: pytest.fail("listed the loose files"))
    assert [reader.get(b) for b in range(1, 10)] == [written[b] for b in range(1, 10)]
