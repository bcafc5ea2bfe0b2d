"""Recent batches' durations from a real checkpoint and sink log (start: Spark's batch timestamp;
commit: the sink log's committed_at_ms), the stall threshold they give, and the lag sampler and
status reading it."""
from __future__ import annotations

import json
from pathlib import Path

from kafka_eos.connectors.operate.batch_times import BatchTimes, batch_start_ms
from kafka_eos.connectors.operate.lag import PartitionLag
from kafka_eos.connectors.operate.lag_sampler import LagSampler
from kafka_eos.connectors.operate.stall_check import StallFacts, input_waiting_s
from kafka_eos.connectors.operate.status_facts import stall
from kafka_eos.txn.log.sink_log import COMMITTED, DECIDED, BatchRecord, SinkLog

IN = ("in", 0)


def planned(root: Path, batch: int, start_ms: int, end: int) -> None:
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(exist_ok=True)
    (root / "offsets" / str(batch)).write_text(
        f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":{start_ms},"conf":{{}}}}\n' +
        json.dumps({"v": 1, "topics": {"in": {"0": end}}}))


def committed(root: Path, log: SinkLog, batch: int, at_ms: float) -> None:
    decided = log.append(BatchRecord(batch, DECIDED, 1, (), {}), None)
    log.append(BatchRecord(batch, COMMITTED, 1, (), {}, {"committed_at_ms": at_ms}), decided)
    (root / "commits" / str(batch)).write_text("v1\n{}")


def test_the_batch_start_is_sparks_batch_timestamp():
    assert batch_start_ms('{"batchWatermarkMs":0,"batchTimestampMs":1700000000123,"conf":{}}') == 1700000000123.0
    assert batch_start_ms('{"batchWatermarkMs":0}') is None
    assert batch_start_ms("not json") is None


def test_batches_run_from_start_to_commit_and_give_the_threshold(tmp_path):
    root, log = tmp_path / "cp", SinkLog(str(tmp_path / "log"), "t-eos")
    for batch in range(5):
        planned(root, batch, 100_000 + batch * 2_000, batch * 200)
        committed(root, log, batch, 100_000 + batch * 2_000 + 500)
    times = BatchTimes(str(root), str(tmp_path / "log"), 2.0)
    batches, waiting = times.recent()
    assert [b.duration_s for b in batches] == [0.5] * 5 and [b.records for b in batches] == [0, 200, 200, 200, 200]
    assert waiting == 0 and times.threshold_s() == 32.0
    planned(root, 5, 110_000, 800 + 200)                        # planned, not committed yet: a usual one
    assert times.recent()[1] == 200 and times.threshold_s() == 32.0
    committed(root, log, 5, 110_500)
    planned(root, 6, 112_000, 1_000 + 40_000)                   # a backlog of 40,000 read at once
    assert times.recent()[1] == 40_000
    assert times.threshold_s() == 2.0 + 3 * (0.5 + 39_800 / 400), "its size beyond the usual at the pipeline's rate"
    committed(root, log, 6, 112_000 + 60_000)
    for batch in (7, 8):                                        # then batches of 20 s
        planned(root, batch, 200_000 + batch * 30_000, 41_000 + batch)
        committed(root, log, batch, 200_000 + batch * 30_000 + 20_000)
    batches, waiting = times.recent()
    assert [b.duration_s for b in batches] == [0.5] * 6 + [60.0, 20.0, 20.0] and waiting == 0
    assert times.threshold_s() == 62.0, "the 95th percentile (rounded down) of 9: the second slowest, 20 s"


def test_an_at_least_once_pipeline_has_the_floor(tmp_path):
    planned(tmp_path, 0, 100_000, 5)
    assert BatchTimes(str(tmp_path), None, 10.0).threshold_s() == 40.0


def test_the_lag_sampler_exports_the_threshold_even_before_a_commit(tmp_path):
    root, log = tmp_path / "cp", SinkLog(str(tmp_path / "log"), "t-eos")
    planned(root, 0, 100_000, 5)
    sampler = LagSampler(str(root), str(tmp_path / "log"), lambda tps: {IN: 9}, lambda starts: {IN: (5, 1)},
                         clock=lambda: 200.0, times=BatchTimes(str(root), str(tmp_path / "log"), 2.0))
    assert sampler.sample().stall_threshold_s == 32.0, "nothing committed yet: the floor"
    committed(root, log, 0, 130_000)
    facts = sampler.sample()
    assert facts.stall_threshold_s == 32.0 and facts.partitions[IN].records == 4, "batch 0 (30 s) alone: the floor"


def test_a_one_shot_reading_waits_from_the_later_of_the_last_commit_and_the_oldest_unread_record():
    lag = {IN: PartitionLag(40, 90.0), ("in", 1): PartitionLag(0, 0.0)}
    assert input_waiting_s(1_000.0, 900.0, lag) == 90.0, "the oldest record arrived after the last commit"
    assert input_waiting_s(1_000.0, 960.0, lag) == 40.0, "a commit since: from that commit"
    assert input_waiting_s(1_000.0, None, lag) == 90.0, "nothing committed yet: the oldest record"
    assert input_waiting_s(1_000.0, 100.0, {IN: PartitionLag(0, 0.0)}) == 0.0, "nothing waits"


def test_status_says_a_stall_and_whether_the_driver_answers():
    quiet = StallFacts(32.0, 20.0, 2_000, 980.0)
    assert stall(quiet, 1_000.0, "p.yaml") == []
    [line] = stall(StallFacts(32.0, 45.0, 4_500, 955.0, "does not answer at http://127.0.0.1:9464/metrics "
                              "(timed out)"), 1_000.0, "p.yaml")
    assert line.startswith("no batch committed while input waits: 4500 records have waited 45 s (last batch "
                           "committed 45 s ago), longer than this pipeline's stall threshold of 32 s; the driver "
                           "does not answer at http://127.0.0.1:9464/metrics (timed out)"), line
    assert "kafka-eos run p.yaml" in line and "runbooks.md#no-batch-committed-a-stalled-pipeline" in line
    [never] = stall(StallFacts(32.0, 50.0, 10, None), 1_000.0, "p.yaml")
    assert "(no batch committed yet)" in never
