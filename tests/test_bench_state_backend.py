"""The pure parts of bench.state_backend: the input's events and expected windows, batch quantiles,
the summary, the verdict and the report lines."""
from __future__ import annotations

from bench.method import round_ratios
from bench.state_backend import (DELAY_MS, T0, WINDOW_MS, batch_quantiles, event, expected, lines, summarize,
                                 verdict)


def test_events_rise_in_time_spread_over_the_keys_and_expected_counts_only_closed_windows():
    events = [event(i, 1000, 10) for i in range(1000)]
    assert {key for key, _ in events} == {f"k{n}" for n in range(10)}
    assert events[0][1] == T0 - 2000 and max(at for _, at in events) < T0 + 8 * 60_000 + 2000
    want = expected(1000, 10)
    closed_until = max(at for _, at in events) - DELAY_MS
    assert want and all(start + WINDOW_MS <= closed_until for _, start in want)
    assert sum(want.values()) == sum(1 for _, at in events if at - at % WINDOW_MS + WINDOW_MS <= closed_until)


def test_batch_quantiles_leave_out_the_first_batch():
    lines_ = [(0.0, f"kafka-eos p batch {n}: 100 in, 10 out, batch {ms} ms") for n, ms in
              enumerate([9000, 100, 200, 300, 400, 500])]
    figures = batch_quantiles(lines_)
    assert figures["batch_p50_ms"] == 300 and 400 <= figures["batch_p95_ms"] <= 500


def ratios(rate: list[float], jvm: list[float]) -> dict:
    return {"records_per_s": round_ratios(rate, [1.0] * len(rate)), "jvm_peak_rss_mb": round_ratios(jvm, [1.0] * len(jvm))}


def test_the_verdict_takes_rocksdb_only_when_it_wins_or_ties_with_less_memory():
    assert verdict(ratios([1.1, 1.2, 1.05], [1.3, 1.3, 1.3])) == "rocksdb"
    assert verdict(ratios([0.97, 1.02, 0.96], [0.8, 0.9, 0.85])) == "rocksdb"
    assert verdict(ratios([0.97, 1.02, 0.96], [0.8, 1.1, 0.85])) == "inconclusive"
    assert verdict(ratios([0.8, 1.3, 0.9], [0.8, 0.9, 0.85])) == "inconclusive"
    assert verdict(ratios([0.8, 0.9, 0.7], [0.8, 0.9, 0.85])) == "hdfs"


def run(rate: int, rss: int, exact: bool = True) -> dict:
    return {"records_per_s": rate, "batch_p50_ms": 500, "batch_p95_ms": 900, "jvm_peak_rss_mb": rss,
            "tree_peak_pss_mb": rss * 2, "state_mb": 3.0, "output_exact": exact}


def test_summarize_gives_figures_per_arm_ratios_per_round_and_the_report():
    out = summarize({"hdfs": [run(1000, 900), run(1100, 950)], "rocksdb": [run(1200, 800), run(1210, 850)]})
    assert out["records_per_s"]["rocksdb"]["median"] == 1205
    assert out["ratio_rocksdb_to_hdfs"]["records_per_s"]["per_round"] == [1.2, 1.1]
    assert out["output_exact"] and out["verdict"] == "rocksdb"
    result = {**out, "input": {"records": 1000, "keys": 10, "window": "2 minutes", "max_offsets_per_trigger": 100},
              "rounds": 2, "load_avg_1m": {"start": 1.0}}
    text = "\n".join(lines(result))
    assert "records_per_s: hdfs 1,050 [1,000-1,100], rocksdb 1,205 [1,200-1,210]" in text
    assert "verdict: rocksdb" in text
    assert not summarize({"hdfs": [run(1000, 900, exact=False)], "rocksdb": [run(1000, 900)]})["output_exact"]
