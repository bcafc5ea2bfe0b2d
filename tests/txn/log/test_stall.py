"""The stall threshold: the trigger plus the larger of a floor and a factor of the pipeline's own
slow batch, and when a lag probe samples next as a stall nears it (pure)."""
from __future__ import annotations

from kafka_eos.txn.log.stall import (FLOOR_S, STALLED_RESAMPLE_S, WINDOW, Batch, expected_s, next_sample_in_s, quantile,
                                 recent_batches, stall_threshold_s)


def took(*seconds: float, records: int = 0) -> list[Batch]:
    return [Batch(s, records) for s in seconds]


def test_the_quantile_is_the_nearest_rank_rounded_down_never_the_slowest_of_several():
    assert quantile([], 0.95) == 0.0
    assert quantile([3.0], 0.95) == 0.0, "one batch alone sets nothing (a query's first: its start, its warm-up)"
    assert quantile([3.0, 12.5], 0.95) == 3.0
    assert quantile([float(n) for n in range(1, 101)], 0.95) == 95.0
    assert quantile([float(n) for n in range(1, 11)], 0.95) == 9.0, "few batches: the second slowest"
    assert quantile([float(n) for n in range(1, 51)], 0.95) == 47.0


def test_fast_batches_get_the_floor_beyond_their_trigger():
    assert stall_threshold_s(2.0, took(*[0.5] * 40)) == 2.0 + FLOOR_S == 32.0
    assert stall_threshold_s(2.0, []) == 32.0, "no batch known yet (or at-least-once): the floor"
    assert stall_threshold_s(0.0, took(0.2)) == 30.0, "as fast as possible"
    assert stall_threshold_s(60.0, took(*[5.0] * 10)) == 90.0


def test_slow_batches_raise_it_to_three_times_their_slow_batch():
    assert stall_threshold_s(2.0, took(*[20.0] * 30)) == 62.0
    assert stall_threshold_s(10.0, took(*[4.0] * 40 + [15.0] * 10)) == 55.0, "the 95th percentile: 15 s"


def test_one_outlier_never_moves_it_two_do():
    assert stall_threshold_s(2.0, took(*[1.0] * 49 + [100.0])) == 32.0, "a restart's replayed batch, 1 of 50"
    assert stall_threshold_s(2.0, took(12.5, 0.5, 0.6, 0.4)) == 32.0, "the query's warm-up batch 0"
    assert stall_threshold_s(2.0, took(*[1.0] * 8 + [100.0, 100.0])) == 302.0, "2 of 10: slow is how it runs"


def test_only_the_newest_window_counts():
    assert stall_threshold_s(2.0, took(*[100.0] * 10 + [1.0] * WINDOW)) == 32.0


def test_a_batch_planned_larger_than_usual_gets_the_time_its_size_needs_at_the_pipelines_rate():
    usual = took(*[0.5] * 20, records=200)                      # 400 records/s, overhead and all
    assert expected_s(usual, 200) == 0.5, "a batch of the usual size: the slow batch covers it"
    assert stall_threshold_s(2.0, usual, 200) == 32.0, "a usual batch planned: the floor"
    assert expected_s(usual, 20_200) == 0.5 + 50.0
    assert stall_threshold_s(2.0, usual, 20_200) == 2.0 + 3 * 50.5, "a backlog of 20,000 more: 100 batches"
    assert stall_threshold_s(2.0, took(*[0.5] * 20), 20_000) == 32.0, "no records known: no rate"
    warm = [Batch(30.0, 300)]                                   # only the query's first batch
    assert expected_s(warm, 200) == 0.0 and stall_threshold_s(20.0, warm, 200) == 50.0, "the floor"
    slow_small = took(0.5, 0.5, 0.5, records=10)                # 20 records/s, mostly a batch's fixed cost
    assert expected_s(slow_small, 10) == 0.5, "that rate is not applied to a batch no larger"
    fast = took(*[2.0] * 19, records=20_000) + [Batch(0.001, 50_000)]
    assert expected_s(fast, 100_000) == 2.0 + 8.0, "a freak rate (or size) alone does not set it"


def test_batches_need_both_times_and_durations_are_never_negative():
    starts = {1: 1_000.0, 2: 5_000.0, 3: 9_000.0, 4: 20_000.0}
    commits = {2: 6_500.0, 3: 8_000.0, 4: 21_250.0, 5: 30_000.0}
    assert recent_batches(starts, commits, {2: 10, 4: 7}) == [Batch(1.5, 10), Batch(0.0, 0), Batch(1.25, 7)]
    many = {b: float(b * 1000) for b in range(WINDOW + 10)}
    assert len(recent_batches(many, {b: t + 500 for b, t in many.items()}, {})) == WINDOW


def test_the_lag_probe_samples_when_the_threshold_would_be_crossed_and_often_while_stalled():
    assert next_sample_in_s(0.0, 32.0, 15.0) == 15.0, "nothing waits: its interval"
    assert next_sample_in_s(2.0, 32.0, 15.0) == 15.0, "far from the threshold"
    assert next_sample_in_s(25.0, 32.0, 15.0) == 7.5, "just after the crossing"
    assert next_sample_in_s(31.9, 32.0, 15.0) == 1.0, "never sooner than a second"
    assert next_sample_in_s(40.0, 32.0, 15.0) == STALLED_RESAMPLE_S, "stalled: to see its end soon"
    assert next_sample_in_s(40.0, 32.0, 2.0) == 2.0, "never later than its interval"
