"""The pure parts of bench.cells: the parts of a run, the result name, per-batch figures and ratios, report lines."""
from __future__ import annotations

import pytest

from bench.cells import ALL, DEFAULT, batch_figures, batch_summary, lines, parse_cells, result_name
from bench.method import summary


def test_parse_cells_defaults_to_every_part_but_64p_and_keeps_the_suite_order():
    assert parse_cells() == list(DEFAULT) == [c for c in ALL if c != "64p"]
    assert parse_cells("all") == list(ALL)
    assert parse_cells("small_batch, 4p") == ["4p", "small_batch"]


def test_parse_cells_skips_parts_and_honours_the_older_flags():
    assert "64p" not in parse_cells(skip="64p")
    assert parse_cells("4p,profile,scaling", no_profile=True, no_scaling=True) == ["4p"]


def test_parse_cells_refuses_an_unknown_part():
    with pytest.raises(ValueError, match="unknown cells"):
        parse_cells("8p")


def test_result_name_never_replaces_a_full_run():
    assert result_name(False, list(DEFAULT)) is None
    assert result_name(True, list(DEFAULT)) == "quick"
    assert result_name(False, list(ALL)) is None
    assert result_name(False, ["small_batch"]) == "small_batch"
    assert result_name(True, ["16p", "64p"]) == "quick-16p-64p"


def batch(n: int, trigger: int, add: int, wal: int = 10, commit: int | None = 20) -> dict:
    ms = {"triggerExecution": trigger, "addBatch": add, "walCommit": wal}
    if commit is not None:
        ms["commitOffsets"] = commit
    return {"batch": n, "rows": 4000, "ms": ms}


def test_batch_figures_leave_out_the_first_batch_and_take_medians():
    per_batch = [batch(0, 9000, 8000), batch(1, 400, 300), batch(2, 600, 500, commit=None), batch(3, 500, 350)]
    assert batch_figures(per_batch) == {"triggerExecution": 500, "addBatch": 350, "walCommit": 10,
                                        "commitOffsets": 20, "timed_batches": 3}


def test_batch_summary_gives_per_round_ratios_of_the_batch_times():
    def run(*ms: int) -> dict:
        return {"per_batch": [batch(0, 5000, 4000)] + [batch(i + 1, m, m - 100) for i, m in enumerate(ms)]}
    runs = {"eos": [run(500, 500), run(400, 400)], "eos_alo": [run(250, 250), run(400, 400)],
            "spark_tuned": [run(250, 250), run(600, 600)]}
    out = batch_summary(runs)
    assert out["batch_ms"]["eos"]["samples"] == [500, 400]
    assert out["ratios_ms"]["spark_tuned_vs_eos"]["per_round"] == [0.5, 1.5]
    assert out["ratios_ms"]["eos_vs_eos_alo"]["per_round"] == [2.0, 1.0]
    assert out["stages_ms"]["eos"] == {"triggerExecution": 450, "addBatch": 350, "walCommit": 10, "commitOffsets": 20}


def test_lines_report_rates_or_batch_times_with_the_ratios():
    ratio = {"median": 0.9, "min": 0.8, "max": 1.1, "per_round": [0.8, 0.9, 1.1]}
    p16 = {"input": {"partitions": 16, "records": 1_000_000, "record_bytes": 100},
           "records_per_s": {"eos": summary([100_000, 110_000])}, "ratios": {"eos_vs_spark_tuned": ratio}}
    small = {"input": {"partitions": 8, "records": 104_000, "record_bytes": 100, "max_offsets_per_trigger": 4000,
                       "trigger_s": 1.0},
             "batch_ms": {"eos": summary([500, 520])}, "stages_ms": {"eos": {"addBatch": 300.0}},
             "ratios_ms": {"spark_tuned_vs_eos": ratio}}
    out = lines({"16p": p16, "small_batch": small})
    assert out[0] == "16p (16 partitions, 1,000,000 x 100 B) records/s, median [min-max]: eos 105,000 [100,000-110,000]"
    assert out[1] == "16p ratios (median of per-round [min-max]): eos_vs_spark_tuned 0.9 [0.8-1.1]"
    assert out[2].startswith("small_batch (8 partitions, 104,000 x 100 B, batches of 4,000, trigger 1 s) ms per batch")
    assert out[3] == "small_batch where the batch goes (median ms): eos addBatch 300.0"


def test_batch_figures_leave_out_spark_s_last_batch_of_the_remainder():
    per_batch = [batch(0, 1400, 900), batch(1, 700, 500), batch(2, 740, 520), batch(3, 1060, 800)]
    per_batch[1]["rows"], per_batch[3]["rows"] = 3994, 16
    assert batch_figures(per_batch)["triggerExecution"] == 720
    assert batch_figures(per_batch)["timed_batches"] == 2
