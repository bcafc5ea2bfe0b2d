"""bench.run's options and result document, bench.throughput's ratios, and the plot of a partial run (pure logic)."""
from __future__ import annotations

import json

from bench import cells, run
from bench.method import summary
from bench.plot import plot
from bench.stage_profile import by_size
from bench.throughput import PARTITIONS, Input, ratios


def test_input_partitions_default_to_the_4_partition_suite():
    inp = Input("b:9092", "in", "warm", 200_000, 100, 1.0, 50_000)
    assert (inp.partitions, inp.warmup_records) == (PARTITIONS, 100_000)


def test_ratios_cover_only_the_configurations_that_ran():
    out = ratios({"eos": [100.0, 120.0], "eos_alo": [110.0, 120.0], "spark_tuned": [100.0, 150.0]})
    assert set(out) == {"eos_vs_eos_alo", "eos_vs_spark_tuned", "eos_alo_vs_eos"}
    assert out["eos_alo_vs_eos"]["per_round"] == [1.1, 1.0]
    assert out["eos_vs_spark_tuned"]["per_round"] == [1.0, 0.8]


def test_options_pick_parts_and_quick_shrinks_the_cells():
    a = run.options(["--quick", "--cells", "small_batch,16p"])
    assert a.cells == ["16p", "small_batch"]
    assert (a.records, a.max_offsets, a.small_batches) == (200_000, 50_000, 9)
    assert run.options(["--quick", "--records", "20000"]).records == 20_000
    assert run.options(["--skip-cells", "64p", "--no-scaling"]).cells == [c for c in cells.DEFAULT
                                                                          if c not in ("64p", "scaling")]
    assert run.options([]).small_batches == cells.SMALL_BATCH_BATCHES


def test_by_size_reads_old_and_new_profiles():
    old = {"exactly_once": {}, "at_least_once": {}, "record_bytes": 100}
    assert by_size(old) == {"100": old}
    assert by_size({"100": old, "1024": old}) == {"100": old, "1024": old}
    assert by_size(None) == {}


def partial_result() -> dict:
    """A small_batch-only run: no 4-partition sizes, no latency, no commit."""
    a = run.options(["--cells", "small_batch"])
    small = {"input": {"partitions": 8, "records": 104_000, "record_bytes": 100, "max_offsets_per_trigger": 4000,
                       "trigger_s": 1.0},
             "batch_ms": {"eos": summary([500, 520])}, "stages_ms": {"eos": {"addBatch": 300.0}},
             "ratios_ms": {"spark_tuned_vs_eos": {"median": 0.9, "min": 0.8, "max": 1.0, "per_round": [0.9]}}}
    measured = {"throughput": {}, "latency_runs": [], "cells": {"small_batch": small},
                "load_avg_1m": {"start": 1.0, "end": 1.5}}
    return run.assemble(a, measured)


def test_a_partial_run_assembles_with_its_goals(capsys):
    result = partial_result()
    assert result["parts"] == ["small_batch"] and result["commit_ms"] == {}
    assert result["goals_27"]["exactly_once_vs_spark_tuned"]["cells"][3]["met"] is False
    result.update(date="2026-11-26", machine={"cores": 2})
    run.report(result, "r.json", "r.png")
    printed = capsys.readouterr().out
    assert "small_batch ratios (median of per-round [min-max]): spark_tuned_vs_eos 0.9 [0.8-1.0]" in printed
    assert "goal exactly-once >= 1.0x Spark tuned" in printed


def test_plot_draws_a_partial_run(tmp_path):
    result = json.loads(json.dumps(partial_result()))
    result.update(date="2026-11-26", machine={k: "?" for k in ("cores", "cpu", "pyspark", "spark_sql_kafka", "kafka",
                                                              "librdkafka", "python", "java")})
    assert plot(result, tmp_path / "r.png").stat().st_size > 0


def test_a_second_run_of_the_day_keeps_the_first_runs_file(tmp_path, monkeypatch):
    from bench import common
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    monkeypatch.setattr(common, "machine", lambda: {})
    first, second, third = (common.write_result("4p", {"run": n}) for n in range(3))
    assert [p.name[10:] for p in (first, second, third)] == ["-4p.json", "-4p-2.json", "-4p-3.json"]
    assert '"run": 0' in first.read_text()
