"""bench.stage_profile.small_batch_medians: per-task stage medians of a latency run (pure logic)."""
from bench.stage_profile import small_batch_medians


def test_small_batch_medians_skip_the_first_two_batches_and_take_per_task_medians():
    lines = [
        {"side": "sink", "batch": 0, "sink_open": 9.0, "wall_s": 9.0},          # start-up: left out
        {"side": "sink", "batch": 2, "sink_open": 0.010, "wall_s": 0.200},
        {"side": "sink", "batch": 2, "sink_open": 0.030, "wall_s": 0.220},
        {"side": "sink", "batch": 3, "sink_open": 0.020, "wall_s": 0.210},
        {"side": "source", "batch": 3, "source_busy": 0.044, "wall_s": 0.047},
        {"side": "commit", "batch": 2, "commit_s": 0.025},
        {"side": "commit", "batch": 3, "commit_s": 0.035},
    ]
    per_batch = [{"batch": 1, "ms": {"addBatch": 900}}, {"batch": 2, "ms": {"addBatch": 400, "walCommit": 50}},
                 {"batch": 3, "ms": {"addBatch": 420}}]
    out = small_batch_medians(lines, per_batch)
    assert out["sink"] == {"sink_open": 20.0, "wall_s": 210.0}
    assert out["source"] == {"source_busy": 44.0, "wall_s": 47.0}
    assert out["driver_commit_ms"] == 30.0
    assert out["spark_ms"] == {"addBatch": 410, "walCommit": 25}
