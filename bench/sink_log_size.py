"""What the sink log's evidence costs on disk and in the commit path (issue 59: retention beyond 100 batches).

For realistic committed records (2 and 8 sink partitions, each writing 4 or 16 output partitions,
with digests; the inputs a Spark offset log file of as many source partitions), on the local disk:
- bytes per batch as loose files (decided + committed record) and rolled (its share of a segment),
  apparent and allocated (file system blocks);
- files in the log at steady state, files and segments created per day at one batch a second;
- the time of the commit path's prune: without a roll, with one (1,000 batches into a segment) and
  while the rolled batches' loose files are deleted (``ROLLED_DELETES`` batches a prune); of
  reading: a rolled batch from a cold and a cached segment, ``batch_ids`` of a week's segments
  (listed by name only).

    python -m bench.sink_log_size [--rounds 3]

Writes ``bench/results/<date>-sink-log-size.json``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import write_result
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.writer.record_digest import DIGEST_FORMAT
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, KEEP_BATCHES, BatchRecord, SinkLog, SinkLogReader
from kafka_eos.txn.log.sink_log_segments import (DEFAULT_EVIDENCE_RETENTION_MS, ROLLED_DELETES, SEGMENT_BATCHES,
                                             SEGMENTS_DIR, Segment)

DAY_S = 86_400
SPARK_CONF = ('{"spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.streaming.state.'
              'HDFSBackedStateStoreProvider","spark.sql.streaming.multipleWatermarkPolicy":"min",'
              '"spark.sql.shuffle.partitions":"200","spark.sql.streaming.aggregation.stateFormatVersion":"2",'
              '"spark.sql.streaming.join.stateFormatVersion":"2","spark.sql.streaming.stateStore.compression.codec":'
              '"lz4","spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion":"2"}')


def offsets_text(batch_id: int, partitions: int) -> str:
    """A Spark offset log file of one kafka-eos source reading ``partitions`` partitions."""
    ends = {str(p): 1_000_000 + 500 * batch_id + p for p in range(partitions)}
    starts = {str(p): 1_000_000 + 500 * (batch_id - 1) + p for p in range(partitions)}
    source = {"v": 1, "topics": {"orders": ends}, "start": {"orders": starts}, "tasks": partitions, "scan": "output"}
    meta = f'{{"batchWatermarkMs":0,"batchTimestampMs":{1_790_000_000_000 + batch_id * 1000},"conf":{SPARK_CONF}}}'
    return f"v1\n{meta}\n{json.dumps(source)}"


def handles(batch_id: int, sinks: int, outputs: int) -> tuple[TxnHandle, ...]:
    per = 500 * outputs // sinks
    return tuple(TxnHandle(
        sink_partition=k, transactional_id=f"orders-eos-1a2b3c4d-{k}-{batch_id % 2}", producer_id=40_000 + k,
        producer_epoch=batch_id // 2 % 30_000, records=per,
        partitions={"orders-out": {str(p): per // outputs + (p + batch_id) % 7 for p in range(outputs)}},
        precommit_ms=round(80 + (batch_id * 7 + k) % 40 + 0.123, 1),
        digests={"orders-out": {str(p): f"{(batch_id * 1_000_003 + k * 131 + p) * 2_654_435_761 % 2**64:016x}"
                                for p in range(outputs)}},
        digest_format=DIGEST_FORMAT) for k in range(sinks))


def commit(log: SinkLog, batch_id: int, sinks: int, outputs: int, at_ms: float) -> BatchRecord:
    hs, inputs = handles(batch_id, sinks, outputs), offsets_text(batch_id, outputs)
    decided = log.append(BatchRecord(batch_id, DECIDED, sinks, hs, {k: "pending" for k in range(sinks)},
                                     inputs=inputs), None)
    metrics = {"records": float(sum(h.records for h in hs)), "transactions": float(sinks), "commit_ms": 12.3,
               "precommit_max_ms": 119.1, "committed_at_ms": at_ms}
    return log.append(BatchRecord(batch_id, COMMITTED, sinks, hs, {k: "committed" for k in range(sinks)}, metrics,
                                  inputs=inputs), decided)


def sizes(paths: list[Path]) -> tuple[int, int]:
    """(apparent bytes, allocated bytes) of ``paths``."""
    stats = [p.stat() for p in paths]
    return sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats)


def one_shape(sinks: int, outputs: int) -> dict:
    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:  # the local disk, not a tmpfs
        root = Path(tmp) / "log"
        log = SinkLog(str(root), "orders-eos")
        prunes, deleting, roll_ms, t0 = [], [], None, 1_790_000_000_000
        for b in range(KEEP_BATCHES + SEGMENT_BATCHES + SEGMENT_BATCHES // ROLLED_DELETES + 10):
            commit(log, b, sinks, outputs, t0 + b * 1000)
            rolled_loose = (root / f"{SEGMENT_BATCHES - 1}.0.json").exists()  # deleted last of the rolled
            started = time.perf_counter()
            log.prune(now_ms=t0 + b * 1000)
            took = (time.perf_counter() - started) * 1000
            if (root / SEGMENTS_DIR).exists() and roll_ms is None:
                roll_ms = took
            elif roll_ms is not None and rolled_loose:
                deleting.append(took)  # deleting ROLLED_DELETES rolled batches' loose files
            else:
                prunes.append(took)
        segment = next((root / SEGMENTS_DIR).iterdir())
        loose = sorted(root.glob("[0-9]*.json"))
        batches = len({p.name.split(".")[0] for p in loose})
        loose_bytes, loose_alloc = sizes(loose)
        seg_bytes, seg_alloc = sizes([segment])
        cold, warm = [], []
        for b in (5, 500, 999):
            reader = SinkLogReader(str(root))
            started = time.perf_counter()
            reader.get(b)
            cold.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            reader.get(b + 1)
            warm.append((time.perf_counter() - started) * 1000)
        record = SinkLogReader(str(root)).get(KEEP_BATCHES + SEGMENT_BATCHES - 1)
        assert record is not None
        return {"sink_partitions": sinks, "output_partitions": outputs, "committed_record_bytes": len(record.to_json()),
                "inputs_bytes": len(record.inputs or ""),
                "loose_bytes_per_batch": round(loose_bytes / batches), "loose_allocated_per_batch": round(loose_alloc / batches),
                "rolled_bytes_per_batch": round(seg_bytes / SEGMENT_BATCHES, 1),
                "rolled_allocated_per_batch": round(seg_alloc / SEGMENT_BATCHES, 1), "segment_bytes": seg_bytes,
                "prune_ms_without_roll_median": round(statistics.median(prunes), 3),
                "prune_ms_without_roll_p99": round(sorted(prunes)[int(len(prunes) * 0.99)], 3),
                "roll_ms": round(roll_ms or 0.0, 1),
                "prune_ms_deleting_rolled_median": round(statistics.median(deleting), 2),
                "prunes_deleting_rolled": len(deleting),
                "get_rolled_cold_ms": round(statistics.median(cold), 2),
                "get_rolled_cached_ms": round(statistics.median(warm), 3)}


def week_listing() -> dict:
    """``batch_ids`` over a week of segments at one batch a second (names only: empty files)."""
    segments = DEFAULT_EVIDENCE_RETENTION_MS // 1000 // SEGMENT_BATCHES
    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:
        folder = Path(tmp) / SEGMENTS_DIR
        folder.mkdir()
        for n in range(segments):
            (folder / Segment(n * SEGMENT_BATCHES, (n + 1) * SEGMENT_BATCHES - 1).name).write_bytes(b"")
        started = time.perf_counter()
        ids = SinkLogReader(tmp).batch_ids()
        return {"segments": segments, "batch_ids": len(ids), "batch_ids_ms": round((time.perf_counter() - started) * 1000, 1)}


def steady_state() -> dict:
    """At one batch a second with the default retention: loose batches between KEEP and KEEP + a segment."""
    segments = DEFAULT_EVIDENCE_RETENTION_MS // 1000 / SEGMENT_BATCHES
    return {"loose_batches": [KEEP_BATCHES, KEEP_BATCHES + SEGMENT_BATCHES - 1],
            "loose_files_per_committed_batch": 2, "segments": [int(segments), int(segments) + 1],
            "files_in_log": [2 * KEEP_BATCHES + int(segments) + 1, 2 * (KEEP_BATCHES + SEGMENT_BATCHES - 1) + int(segments) + 2],
            "files_created_per_day": 2 * DAY_S + DAY_S / SEGMENT_BATCHES,
            "files_deleted_per_day": 2 * DAY_S + DAY_S / SEGMENT_BATCHES,
            "segments_per_day": DAY_S / SEGMENT_BATCHES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    shapes = [one_shape(s, o) for _ in range(args.rounds) for s in (2, 8) for o in (4, 16)]
    result = {"shapes": shapes, "steady_state": steady_state(), "week_listing": week_listing()}
    for shape in shapes:
        print(json.dumps(shape))
    print(json.dumps(result["steady_state"]))
    print(json.dumps(result["week_listing"]))
    for shape in shapes:
        day = shape["rolled_bytes_per_batch"] * DAY_S
        print(f"{shape['sink_partitions']} sinks x {shape['output_partitions']} outputs: loose "
              f"{shape['loose_bytes_per_batch']} B/batch ({shape['loose_allocated_per_batch']} allocated), rolled "
              f"{shape['rolled_bytes_per_batch']} B/batch; a week rolled {day * 7 / 1e6:.0f} MB; roll "
              f"{shape['roll_ms']} ms, prune {shape['prune_ms_without_roll_median']} ms, deleting "
              f"{shape['prune_ms_deleting_rolled_median']} ms x {shape['prunes_deleting_rolled']}")
    print(write_result("sink-log-size", result))


if __name__ == "__main__":
    main()
