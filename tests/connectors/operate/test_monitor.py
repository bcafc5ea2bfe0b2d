"""`kafka-eos monitor`: the probes of several pipelines in one process without Spark, their series
labelled exporter="monitor"; the command line refuses an invalid file and a pipeline name given twice."""
from __future__ import annotations

import subprocess
import sys
import threading

from kafka_eos.connectors.cli import main
from kafka_eos.connectors.operate.metric_table import BATCH, METRICS, MONITORED, RUN
from kafka_eos.connectors.operate.monitor import Monitor, duplicate_names, run
from tests.connectors.operate.test_metrics import scrape
from tests.factories import load, valid, write


def test_the_monitor_imports_no_spark():
    code = ("import sys; import kafka_eos.connectors.operate.monitor, kafka_eos.connectors.cli_operator; "
            "from kafka_eos.connectors.pipeline.validation import load_valid; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_it_exports_the_probes_series_of_every_pipeline_and_no_batch_series(tmp_path):
    """Two at-least-once pipelines that never committed: their lag probes ask no broker (no test
    touches localhost:9092)."""
    cfgs = []
    for name in ("a", "b"):
        data = valid(tmp_path / name)
        data["name"], data["guarantee"] = name, "at_least_once"
        data["metrics"] = {"sample_interval_s": 1}
        cfg, found = load(tmp_path, data)
        assert cfg is not None, found
        cfgs.append(cfg)
    monitor = Monitor(cfgs, 0)
    try:
        got = scrape(monitor.port)
    finally:
        monitor.close()
    assert got['kafka_eos_batch_budget_seconds{exporter="monitor",pipeline="a"}'] == 130.0
    assert got['kafka_eos_stall_threshold_seconds{exporter="monitor",pipeline="a"}'] == 10 + 30.0, \
        "no batch known: the trigger + the floor, whatever sink.batch_margin_ms"
    assert got['kafka_eos_sample_interval_seconds{exporter="monitor",pipeline="b"}'] == 1
    assert got['kafka_eos_probe_failures_total{exporter="monitor",pipeline="b",probe="lag"}'] == 0
    driver_only = {m.name for m in METRICS if m.source in (BATCH, RUN)}
    assert driver_only and not [k for k in got if k.split("{")[0].removesuffix("_created") in driver_only]
    assert all('exporter="monitor"' in labels for labels in got), got
    assert {m.source for m in MONITORED}.isdisjoint({BATCH, RUN})


def test_run_serves_until_stopped(tmp_path):
    cfg, _ = load(tmp_path, {**valid(tmp_path), "guarantee": "at_least_once"})
    lines: list[str] = []
    stop = threading.Event()
    runner = threading.Thread(target=lambda: lines.append(str(run([cfg], 0, "127.0.0.1", lines.append, stop))))
    runner.start()
    while not lines:
        runner.join(0.05)
    stop.set()
    runner.join(30)
    assert lines[0].startswith("kafka-eos monitor: 1 pipeline(s) (t): metrics at http://127.0.0.1:")
    assert lines[1:] == ["kafka-eos monitor: stopped", "0"]


def test_the_command_refuses_an_invalid_file_and_a_name_given_twice(tmp_path, capsys):
    data = valid(tmp_path)
    first, second = write(tmp_path, "a.yaml", data), write(tmp_path, "b.yaml", data)
    assert main(["monitor", str(first), str(second), "--port", "0"]) == 1
    assert "pipeline name(s) t given twice" in capsys.readouterr().err
    broken = write(tmp_path, "c.yaml", {**data, "sink": {**data["sink"], "topic": ""}})
    assert main(["monitor", str(broken), "--port", "0"]) == 1
    assert "nothing was started" in capsys.readouterr().err
    cfg, _ = load(tmp_path, data)
    assert duplicate_names([cfg, cfg]) == ["t"] and duplicate_names([cfg]) == []
