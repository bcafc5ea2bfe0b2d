"""bench.goals: the goals of issue 27 from a result (pure logic)."""
from __future__ import annotations

from bench.goals import goals_27, latency_ratio, lines, pss_ratio


def ratio(*per_round: float) -> dict:
    ordered = sorted(per_round)
    return {"median": ordered[len(ordered) // 2], "min": ordered[0], "max": ordered[-1], "per_round": list(per_round)}


RATIOS = {"100": {"eos_vs_spark_tuned": ratio(1.02, 1.1, 0.98), "eos_alo_vs_eos": ratio(1.0, 1.05, 1.01)},
          "1024": {"eos_vs_spark_tuned": ratio(0.7, 0.72, 0.71), "eos_alo_vs_eos": ratio(1.02, 1.03, 1.04)}}
CELLS = {"16p": {"ratios": {"eos_vs_spark_tuned": ratio(1.2, 1.3, 1.25), "eos_alo_vs_eos": ratio(1.1, 1.2, 1.0)}},
         "64p": {"ratios": {"eos_vs_spark_tuned": ratio(0.5, 0.6, 0.4), "eos_alo_vs_eos": ratio(0.9, 0.95, 0.97)}},
         "small_batch": {"ratios_ms": {"spark_tuned_vs_eos": ratio(1.1, 1.0, 1.2),
                                       "eos_vs_eos_alo": ratio(1.0, 1.01, 1.02)}}}
MEMORY = {"100": {"eos": {"total_pss_mb": 1300}, "spark_tuned": {"total_pss_mb": 1000}},
          "1024": {"eos": {"total_pss_mb": 1400}, "spark_tuned": {"total_pss_mb": 1000}}}
LATENCY = [{"format": "kafka-eos", "trigger_s": 1.0, "round": 0, "p99": 1200.0},
           {"format": "kafka", "trigger_s": 1.0, "round": 0, "p99": 1250.0},
           {"format": "kafka-eos", "trigger_s": 0.5, "round": 0, "p99": 9000.0},
           {"format": "kafka", "trigger_s": 0.5, "round": 0, "p99": 800.0},
           {"format": "kafka-eos", "trigger_s": 1.0, "round": 1, "p99": 1300.0},
           {"format": "kafka", "trigger_s": 1.0, "round": 1, "p99": 1250.0}]


def test_each_goal_is_met_only_when_every_cell_is():
    goals = goals_27(RATIOS, CELLS, MEMORY, LATENCY)
    tuned = goals["exactly_once_vs_spark_tuned"]
    assert [(c["cell"], c["met"]) for c in tuned["cells"]] == [
        ("100 B, 4 partitions", True), ("1 KB, 4 partitions", False), ("100 B, 16 partitions", True),
        ("small_batch", True)]
    assert tuned["met"] is False
    alo = goals["at_least_once_vs_exactly_once"]
    assert [c["cell"] for c in alo["cells"]] == ["100 B, 4 partitions", "1 KB, 4 partitions", "100 B, 16 partitions",
                                                  "100 B, 64 partitions", "small_batch"]
    assert alo["met"] is False and alo["cells"][3]["met"] is False
    pss = goals["peak_pss_vs_spark_tuned"]
    assert [c["median"] for c in pss["cells"]] == [1.3, 1.4] and [c["met"] for c in pss["cells"]] == [True, False]
    assert goals["latency_p99_vs_spark"]["met"] is True  # per round 0.96 and 1.04: median 1.0


def test_a_partial_run_leaves_unmeasured_goals_open():
    goals = goals_27({"100": RATIOS["100"]}, {}, {}, [])
    assert goals["exactly_once_vs_spark_tuned"]["met"] is None
    assert goals["latency_p99_vs_spark"]["cells"] == [{"cell": "trigger 1 s", "measured": False, "met": None}]
    assert goals["peak_pss_vs_spark_tuned"]["met"] is None


def test_latency_ratio_pairs_the_runs_of_each_round_at_the_trigger():
    out = latency_ratio(LATENCY)
    assert out["per_round"] == [0.96, 1.04]
    assert (out["kafka_eos_p99_ms"], out["spark_p99_ms"]) == (1250.0, 1250.0)
    assert latency_ratio(LATENCY[:1]) is None


def test_pss_ratio_needs_both_samples():
    assert pss_ratio(MEMORY["100"])["median"] == 1.3
    assert pss_ratio({"eos": {"total_pss_mb": 1300}, "spark_tuned": None}) is None
    assert pss_ratio(None) is None


def test_lines_say_which_goals_are_met():
    out = lines(goals_27(RATIOS, CELLS, MEMORY, LATENCY))
    assert out[0].startswith("goal exactly-once >= 1.0x Spark tuned (")
    assert "met no; 100 B, 4 partitions 1.02 [0.98-1.1] yes; 1 KB, 4 partitions 0.71 [0.7-0.72] no" in out[0]
    assert lines(goals_27({}, {}, {}, []))[-1].endswith("met incomplete (not every cell measured); trigger 1 s not measured")


def test_the_ranges_goals_read_their_own_configurations():
    ratios = {"100": {"eos_ranges_vs_spark_tuned": ratio(1.1, 1.2)}, "1024": {"eos_ranges_vs_spark_tuned": ratio(0.9)}}
    cells = {"16p": {"ratios": {"eos_ranges_vs_spark_tuned": ratio(2.0)}},
             "small_batch": {"ratios_ms": {"spark_tuned_vs_eos_ranges": ratio(0.5)}}}
    memory = {"100": {"eos_ranges": {"total_pss_mb": 1200}, "spark_tuned": {"total_pss_mb": 1000}}}
    goals = goals_27(ratios, cells, memory, [])
    ranges = goals["exactly_once_ranges_vs_spark_tuned"]
    assert [c["met"] for c in ranges["cells"]] == [True, False, True, False] and ranges["met"] is False
    pss = goals["peak_pss_ranges_vs_spark_tuned"]
    assert [c["met"] for c in pss["cells"]] == [True, None] and pss["met"] is None
