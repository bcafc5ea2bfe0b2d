"""The pure parts of bench.pipeline_groups: progress lines, roles, PSS series, figures, the marginal pipeline."""
from __future__ import annotations

from bench.pipeline_groups_parts import not_run, summary
from bench.pipeline_groups_parts import PssSeries, batches, marginal_mb, percentile, pipeline_figures, role

LOG = """\
kafka-eos g-p0 batch 0: 812 in, 812 out, 1 transactions, batch 2210 ms, pre-commit max 40 ms, commit 12 ms
kafka-eos g-p1 batch 0: 0 in, nothing committed, batch 310 ms
some Spark line
kafka-eos g-p1 batch 1: 400 in, 400 out, 1 transactions, batch 650 ms, pre-commit max 10 ms, commit 9 ms
kafka-eos g-p0 batch 1: 1000 in, 1000 out, 2 transactions, batch 700 ms, pre-commit max 11 ms, commit 8 ms
"""


def test_batches_are_the_committed_progress_lines() -> None:
    found = batches(LOG)
    assert [(b.name, b.batch, b.read, b.written, b.ms) for b in found] == [
        ("g-p0", 0, 812, 812, 2210), ("g-p1", 1, 400, 400, 650), ("g-p0", 1, 1000, 1000, 700)]


def test_figures_per_pipeline_and_their_medians() -> None:
    figures = pipeline_figures(batches(LOG), window_s=2.0)
    assert figures["per_pipeline"]["g-p0"] == {"batches": 2, "records_per_s": 906.0, "batch_p50_ms": 700,
                                               "batch_p95_ms": 2210, "batch_ms": [2210, 700]}
    assert figures["records_per_s"] == (906.0 + 200.0) / 2
    assert pipeline_figures([], 1.0)["batch_p50_ms"] is None


def test_percentile_nearest_rank() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([float(i) for i in range(1, 101)], 0.5) == 50.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0


def test_marginal_pipeline() -> None:
    assert marginal_mb(3000.0, 1400.0, 5) == 400.0
    assert marginal_mb(1400.0, 1400.0, 1) is None


def test_roles_from_command_lines() -> None:
    assert role(["/usr/lib/jvm/bin/java", "-cp", "x"]) == "driver_jvm"
    assert role(["/v/bin/python", "-m", "kafka_eos.connectors.cli", "run", "a.yaml"]) == "driver_python"
    assert role(["/v/bin/python", "-m", "pyspark.daemon", "pyspark.sql.worker.plan_data_source_read"]) == "driver_runners"
    assert role(["python3", "-m", "pyspark.sql.streaming.python_streaming_source_runner"]) == "driver_runners"
    assert role(["python3", "-m", "kafka_eos.connectors.worker_daemon", "pyspark.worker"]) == "workers"
    assert role(["bash", "spark-class"]) == "other"


def test_pss_series_sums_per_role() -> None:
    series = PssSeries()
    series.add([{"pid": 1, "role": "driver_jvm", "label": "java", "pss": 400.0, "uss": 390.0},
                {"pid": 2, "role": "driver_runners", "label": "r", "pss": 20.0, "uss": 18.0}])
    series.add([{"pid": 1, "role": "driver_jvm", "label": "java", "pss": 410.0, "uss": 400.0},
                {"pid": 2, "role": "driver_runners", "label": "r", "pss": 30.0, "uss": 25.0}])
    out = series.summary()
    assert (out["peak_mb"], out["median_mb"], out["samples"]) == (440.0, 430.0, 2)
    assert out["median_by_role_mb"]["driver_jvm"] == 405.0
    assert out["processes_by_role"]["driver_runners"] == 1 and out["runner_pss_mb"] == [30.0]
    assert PssSeries().summary() == {"samples": 0}


def _run(arm: str, n: int, median: float) -> dict:
    return {"arm": arm, "n": n, "pss": {"median_mb": median, "peak_mb": median + 10},
            "first_commit_s": {"all": 30.0}, "exactly_once": True}


def test_summary_marginal_from_group_1_and_not_run_separate() -> None:
    runs = [_run("group", 1, 1400.0), _run("group", 5, 2200.0), _run("separate", 5, 7000.0)]
    table = summary(runs)
    assert table["group"]["5"]["marginal_mb"] == 200.0
    assert table["group"]["1"]["marginal_mb"] is None
    notes = not_run(runs, [1, 5, 20], {1, 5})
    assert notes == {"20": "not run: 20 x 1400 MB per driver = 28,000 MB, exceeds the machine's 24,576 MB"}
