"""The pure parts of bench.large_state: the input's keys, times and repeats, the output check, the
batch figures, the arms' order, the summary (flagged runs kept out of the medians) and its lines."""
from __future__ import annotations

from collections import Counter

from bench.large_state import lines, order, summarize
from bench.large_state_input import (CLOSE, DUP_EVERY, T0, TAIL, WINDOW_MS, OutputCheck, batch_figures, event,
                                     expected_count, records)


def test_every_key_once_then_the_repeats_identical_all_inside_one_window():
    keys = 1000
    events = [event(i, keys) for i in range(records(keys))]
    assert len(events) == keys + keys // DUP_EVERY
    counts = Counter(key for _, key, _ in events)
    assert set(counts) == {f"k{n}" for n in range(keys)}
    assert all(counts[f"k{n}"] == expected_count(n, keys) for n in range(keys))
    assert sum(n == 2 for n in counts.values()) == keys // DUP_EVERY
    assert events[keys:] == events[: keys // DUP_EVERY]
    assert all(T0 < at < T0 + WINDOW_MS for _, _, at in events) and T0 < TAIL[1] < T0 + WINDOW_MS
    assert CLOSE[1] - 30_000 >= T0 + WINDOW_MS


def windows(keys: int) -> list[dict]:
    return [{"key": f"k{n}", "start_ms": T0, "n": expected_count(n, keys)} for n in range(keys)] + [
        {"key": "tail", "start_ms": T0, "n": 1}]


def check(query: str, keys: int, rows: list[dict]) -> dict:
    c = OutputCheck(query, keys)
    for row in rows:
        c.add(row)
    return c.result()


def test_the_output_check_takes_every_window_once_with_its_count_and_nothing_else():
    assert check("windowed", 64, windows(64))["exact"]
    twice = check("windowed", 64, windows(64) + [windows(64)[3]])
    assert not twice["exact"] and twice["twice"] == 1
    wrong = windows(64)
    wrong[5] = {**wrong[5], "n": wrong[5]["n"] + 1}
    assert check("windowed", 64, wrong)["wrong"] == 1
    missing = check("windowed", 64, windows(64)[1:])
    assert not missing["exact"] and missing["missing"] == 1
    assert check("windowed", 64, windows(64) + [{"key": "close", "start_ms": 0, "n": 1}])["unknown"] == 1
    assert not check("windowed", 64, windows(64)[:-1])["exact"]  # tail missing


def test_the_dedup_check_takes_every_key_once_whatever_its_count():
    rows = [{"key": f"k{n}", "at": 1} for n in range(50)] + [{"key": "tail", "at": 2}]
    assert check("dedup", 50, rows)["exact"]
    assert check("dedup", 50, rows + rows[:1])["twice"] == 1


def test_batch_figures_take_the_batches_with_rows_after_the_first():
    figures = batch_figures([(100, 9000), (100, 1000), (0, 50), (100, 1000), (200, 3000)])
    assert figures["records_per_s"] == round(400 / 5.0) and figures["batch_p50_ms"] == 1000
    assert 2000 < figures["batch_p95_ms"] <= 3000 and figures["batches"] == 5 and figures["rows_read"] == 500
    assert batch_figures([])["records_per_s"] is None


def test_the_arms_order_flips_each_round():
    assert order(0, ("a", "b", "c")) == ("a", "b", "c") and order(1, ("a", "b", "c")) == ("c", "b", "a")


def run(arm: str, r: int, rate: int, exact: bool = True, **more) -> dict:
    return {"arm": arm, "round": r, "records_per_s": rate, "batch_p50_ms": 500, "batch_p95_ms": 900,
            "jvm_peak_rss_mb": 1000, "tree_peak_pss_mb": 1500, "checkpoint_mb": 10.0, "state_mb": 8.0,
            "restart_s": 20.0, "output_exact": exact, "failures": {} if exact else {"main": "exit 4"},
            "output": {"exact": exact}, **more}


def test_the_summary_keeps_flagged_runs_out_of_the_medians_and_the_ratios():
    runs = {"hdfs": [run("hdfs", 0, 100, savepoint_s=3.0, restore_s=50.0), run("hdfs", 1, 120),
                     run("hdfs", 2, 5, exact=False)],
            "rocksdb": [run("rocksdb", 0, 150), run("rocksdb", 1, 180), run("rocksdb", 2, 170)],
            "spark": [run("spark", 0, 300), run("spark", 1, 360), run("spark", 2, 330)]}
    s = summarize(runs)
    assert s["records_per_s"]["hdfs"]["samples"] == [100, 120] and s["records_per_s"]["rocksdb"]["median"] == 170
    assert s["ratios"]["rocksdb/hdfs"]["records_per_s"]["per_round"] == [1.5, 1.5]
    assert s["savepoint_s"] == {"hdfs": s["savepoint_s"]["hdfs"]} and s["savepoint_s"]["hdfs"]["median"] == 3
    assert not s["all_exact"] and s["flagged"] == [{"arm": "hdfs", "round": 2, "failures": {"main": "exit 4"},
                                                    "output": {"exact": False}}]
    text = "\n".join(lines({"input": {"keys": 10, "records": 11, "max_offsets_per_trigger": 1}, "heap": "1g",
                            "rounds": 3, "queries": {"windowed": s}}))
    assert "hdfs 110 [100-120] (2)" in text and "rocksdb/hdfs per round: records_per_s 1.5 [1.5-1.5]" in text
    assert "flagged runs: [{'arm': 'hdfs', 'round': 2" in text


def test_the_restart_moves_the_watermark_past_every_event_unless_a_restore_follows():
    from pathlib import Path

    from bench.large_state_arms import Cell, closing
    from bench.large_state_input import QUERIES

    def cell(query: str, savepoints: bool = True) -> Cell:
        return Cell("b", "in", 10, QUERIES[query], 1, "1g", Path("."), savepoints)
    assert closing(cell("windowed"), spark=False) == [TAIL]
    assert closing(cell("windowed"), spark=True) == [TAIL, CLOSE]
    assert closing(cell("windowed", savepoints=False), spark=False) == [TAIL, CLOSE]
    assert closing(cell("dedup"), spark=False) == closing(cell("dedup"), spark=True) == [TAIL, CLOSE]


def test_files_combine_with_rounds_numbered_on_and_ratios_paired_by_round():
    from bench.large_state import combine
    one = {"input": {"keys": 10}, "heap": "2g", "arms": ["hdfs", "rocksdb", "spark"], "file": "a",
           "queries": {"windowed": {"runs": {"hdfs": [run("hdfs", 0, 100)], "rocksdb": [run("rocksdb", 0, 150)]}}}}
    two = {**one, "file": "b", "queries": {"windowed": {"runs": {
        "spark": [run("spark", 0, 400)], "rocksdb": [run("rocksdb", 0, 200)], "hdfs": [run("hdfs", 0, 100)]}}}}
    c = combine([one, two])
    q = c["queries"]["windowed"]
    assert c["rounds"] == 2 and [r["round"] for r in q["runs"]["rocksdb"]] == [0, 1]
    assert q["ratios"]["rocksdb/hdfs"]["records_per_s"]["per_round"] == [1.5, 2.0]
    assert q["ratios"]["hdfs/spark"]["records_per_s"]["per_round"] == [0.25]
    assert q["records_per_s"]["spark"]["samples"] == [400]
