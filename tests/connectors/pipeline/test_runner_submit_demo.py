"""Pure logic of the pipeline runner: checkpoint shape, progress lines, error summaries, the zip,
the spark-submit command line, the CLI's run arguments, the demo's counting."""
from __future__ import annotations

import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_eos.connectors.cli import build_parser
from kafka_eos.connectors.demo_data import count_ids, expected_total, order
from kafka_eos.connectors.pipeline.checkpoint_compat import CheckpointShapeError, check_checkpoint, checkpoint_sources
from kafka_eos.connectors.pipeline.progress import batch_report, format_line, records_read, sink_log_location
from kafka_eos.connectors.pipeline.runner import error_summary
from kafka_eos.connectors.pipeline.submit import build_zip, submit_command
from tests.factories import load, valid

OFFSETS_HEAD = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n'


def write_offsets(location: Path, batch: int, sources: int) -> None:
    (location / "offsets").mkdir(parents=True, exist_ok=True)
    lines = ['{"v": 1, "topics": {"in": {"0": 5}}}'] * sources
    (location / "offsets" / str(batch)).write_text(OFFSETS_HEAD + "\n".join(lines))


def config(tmp_path: Path, policy: str):
    data = valid(tmp_path)
    data["errors"] = {"on_decode_error": policy, **({"dlq_topic": "in-dlq"} if policy == "dlq" else {})}
    cfg, problems = load(tmp_path, data)
    assert cfg is not None, problems
    return cfg


def test_checkpoint_sources_reads_the_newest_offset_log_entry(tmp_path):
    assert checkpoint_sources(str(tmp_path / "none")) is None
    assert not (tmp_path / "none").exists(), "looking creates nothing"
    write_offsets(tmp_path, 0, 1)
    write_offsets(tmp_path, 10, 2)          # numeric, not lexical order: 10 is newer than 9
    write_offsets(tmp_path, 9, 1)
    assert checkpoint_sources(str(tmp_path)) == 2


@pytest.mark.parametrize("policy,sources,ok", [("dlq", 2, True), ("skip", 1, True), ("fail", 1, True),
                                               ("dlq", 1, False), ("skip", 2, False), ("fail", 2, False)])
def test_a_checkpoint_resumes_only_with_a_plan_of_its_shape(tmp_path, policy, sources, ok):
    cfg = config(tmp_path, policy)
    check_checkpoint(cfg)                                   # a new checkpoint: any policy
    write_offsets(Path(cfg.checkpoint.location), 3, sources)
    if ok:
        check_checkpoint(cfg)
    else:
        with pytest.raises(CheckpointShapeError, match=rf"errors.on_decode_error: {policy} cannot resume .*Fix: keep"):
            check_checkpoint(cfg)


def progress(batch_id=4, rows=200, duration=1234):
    return SimpleNamespace(batchId=batch_id, numInputRows=rows, batchDuration=duration)


def test_progress_line_with_a_sink_record_and_a_dlq():
    handle = SimpleNamespace(partitions={"out": {0: 90, 1: 8}, "dlq": {0: 2}})
    record = SimpleNamespace(metrics={"records": 100, "transactions": 2, "precommit_max_ms": 41.2, "commit_ms": 9.7},
                             handles=[handle])
    report = batch_report(progress(rows=200), records_read(progress(rows=200), 2), record, "dlq")
    line = format_line("p", report, record.metrics, "dlq")
    assert line == ("kafka-eos p batch 4: 100 in, 98 out, 2 to DLQ, 2 transactions, batch 1234 ms, "
                    "pre-commit max 41 ms, commit 10 ms")


def test_progress_line_without_a_sink_record_counts_skips():
    assert format_line("p", batch_report(progress(rows=7), 7, None, None, skipped=3), None, None) == \
        "kafka-eos p batch 4: 7 in, 3 skipped, nothing committed, batch 1234 ms"
    assert records_read(progress(rows=7), 1) == 7


def test_sink_log_location_defaults_beside_the_checkpoint(tmp_path):
    cfg = config(tmp_path, "fail")
    assert sink_log_location(cfg) == f"{cfg.checkpoint.location}/kafka-eos-sink"


def test_error_summary_keeps_the_python_exceptions_not_the_stack():
    text = ("org.apache.spark.SparkException: Job aborted\n\tat org.apache...\n"
            "pyspark.errors.exceptions.base.PythonException: boom\n"
            "  File \"x.py\", line 3, in run\n"
            "kafka_eos.serde.decode_errors.RecordDecodeError: record in-0@7 failed to decode: bad\n")
    assert error_summary(text) == "RecordDecodeError: record in-0@7 failed to decode: bad"
    assert error_summary("just one line\nmore") == "just one line"


def test_zip_holds_the_packages_without_bytecode(tmp_path):
    with zipfile.ZipFile(build_zip(tmp_path)) as archive:
        names = archive.namelist()
    assert {"kafka_eos/__init__.py", "kafka_eos/secrets.py", "kafka_eos/connectors/__init__.py",
            "kafka_eos/txn/protocol/protocol.py", "kafka_eos/offsets/__init__.py", "kafka_eos/serde/batch.py",
            "kafka_eos/config/pipelines/orders-json.yaml", "kafka_eos/connectors/pipeline/entry.py"} <= set(names)
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]
    assert not [n for n in names if not n.startswith("kafka_eos/")], "only the kafka_eos namespace ships"
    assert not [n for n in names if n.startswith(("kafka_eos/connectors/dev/", "kafka_eos/connectors/demo"))]


def test_zip_from_an_installed_layout_holds_the_nested_packages(tmp_path, monkeypatch):
    """Installed from a wheel, kafka_eos.config & co. are folders inside kafka_eos/ (not beside it,
    as in the checkout): each is still shipped under its dotted name."""
    from kafka_eos.connectors.pipeline import submit
    site = tmp_path / "site-packages"
    for package in ("kafka_eos", "kafka_eos.config", "kafka_eos.connectors"):
        folder = site.joinpath(*package.split("."))
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / "mod.py").write_text("")
    (site / "kafka_eos" / "config" / "example.yaml").write_text("version: 1")
    monkeypatch.setattr(submit, "package_dir", lambda package: site.joinpath(*package.split(".")))
    out = tmp_path / "out"
    out.mkdir()
    with zipfile.ZipFile(build_zip(out, ("kafka_eos", "kafka_eos.config", "kafka_eos.connectors"))) as archive:
        names = sorted(archive.namelist())
    assert names == ["kafka_eos/__init__.py", "kafka_eos/config/__init__.py", "kafka_eos/config/example.yaml",
                     "kafka_eos/config/mod.py", "kafka_eos/connectors/__init__.py", "kafka_eos/connectors/mod.py",
                     "kafka_eos/mod.py"]


def test_zip_imports_without_the_checkout(tmp_path):
    """The zip alone (as executors get it) imports the sink writer and the source reader."""
    import subprocess
    import sys
    archive = build_zip(tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import kafka_eos.connectors.sink.stream_writer, "
            "kafka_eos.connectors.source.stream_reader, kafka_eos.txn.protocol.protocol as p; print(p.__file__)")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(archive)], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": ":".join(p for p in sys.path if "site-packages" in p)})
    assert out.returncode == 0, out.stderr
    assert str(archive) in out.stdout


def test_submit_command_line(tmp_path):
    cmd = submit_command("p.yaml", "spark://h:7077", tmp_path / "k.zip", True, {"spark.executor.memory": "2g"})
    assert cmd[1:7] == ["--master", "spark://h:7077", "--name", "kafka-eos", "--py-files", str(tmp_path / "k.zip")]
    assert cmd[7:9] == ["--conf", "spark.executor.memory=2g"]
    assert cmd[9].endswith("connectors/pipeline/entry.py")
    assert cmd[10:] == ["--config", str(Path("p.yaml").resolve()), "--once"]


def test_run_arguments():
    args = build_parser().parse_args(["run", "p.yaml", "--master", "spark://h:1", "--once", "--conf", "a=b"])
    assert (args.pipelines, args.master, args.once, args.conf) == (["p.yaml"], "spark://h:1", True, ["a=b"])


def test_run_refuses_a_conf_that_is_not_key_value():
    from kafka_eos.connectors.cli import _conf
    with pytest.raises(SystemExit, match="is not KEY=VALUE"):
        _conf(["spark.executor.memory"])


def test_demo_orders_and_counts():
    key, value = order("r", 7)
    assert key == b"r-7" and b'"quantity": 3' in value and b'"unit_price": "8.07"' in value
    assert expected_total(7) == "24.21"                  # 3 x 8.07
    assert count_ids(["a", "b", "b", "x"], ["a", "b", "c"]) == \
        {"out": 4, "duplicates": 1, "missing": 1, "unexpected": 1}


def test_pipelines_turn_the_sinks_own_batch_line_off(tmp_path):
    from kafka_eos.connectors.pipeline.builder import writer_options
    from kafka_eos.connectors.sink.options import batch_log
    from kafka_eos.txn.protocol.errors import SinkConfigError
    options = writer_options(config(tmp_path, "dlq"), once=True)
    assert batch_log(options) is False and options["trigger.interval.ms"] == "0"
    assert batch_log({}) is True and batch_log({"BatchLog": "TRUE"}) is True
    with pytest.raises(SinkConfigError, match="batchLog='yes'"):
        batch_log({"batchLog": "yes"})


def test_checkpoint_reader_reads_offsets_commits_and_metadata_without_creating(tmp_path):
    from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
    missing = CheckpointReader(str(tmp_path / "none"))
    assert (missing.offset_batches(), missing.commit_batches(), missing.latest_offsets(), missing.query_id()) == \
        ([], [], None, None)
    assert not (tmp_path / "none").exists(), "looking creates nothing"
    write_offsets(tmp_path, 2, 2)
    write_offsets(tmp_path, 10, 1)
    (tmp_path / "offsets" / "11").write_text("")                # torn: not an entry
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / "2").write_text("v1\n{}")
    (tmp_path / "metadata").write_text('{"id":"q-1"}\n')
    reader = CheckpointReader(f"file:{tmp_path}/")
    assert reader.offset_batches() == [2, 10, 11] and reader.commit_batches() == [2]
    entry = reader.offsets(2)
    assert entry.batch_id == 2 and len(entry.sources) == 2 and entry.metadata.startswith('{"batchWatermarkMs"')
    assert reader.latest_offsets().batch_id == 10 and reader.offsets(11) is None
    assert reader.query_id() == "q-1"


def test_progress_reads_the_sink_log_and_creates_nothing(tmp_path):
    from kafka_eos.config.redact import Redactor
    from kafka_eos.connectors.pipeline.progress import ProgressReporter
    cfg = config(tmp_path, "fail")
    reporter = ProgressReporter(cfg, Redactor([]), emit=lambda line: None)
    query = SimpleNamespace(recentProgress=[SimpleNamespace(batchId=0, numInputRows=3, batchDuration=5,
                                                            durationMs={"addBatch": 1})])
    reporter.report(query)
    assert reporter.lines == ["kafka-eos t batch 0: 3 in, nothing committed, batch 5 ms"]
    assert not Path(cfg.checkpoint.location).exists(), "progress created something"


def test_the_first_report_carries_what_this_runs_query_start_aborted_once(tmp_path):
    """The query start's sweep runs in Spark's write planner; its count reaches the driver's report
    through the record beside the sink log, from the run's start on, once."""
    from kafka_eos.config.redact import Redactor
    from kafka_eos.connectors.pipeline.progress import ProgressReporter, sink_log_location
    from kafka_eos.txn.log.start_sweeps import record_sweep
    cfg = config(tmp_path, "fail")
    record_sweep(sink_log_location(cfg), 5, at_ms=1_000)   # an earlier run's start
    record_sweep(sink_log_location(cfg), 2, at_ms=3_000)   # this run's
    reports = []
    reporter = ProgressReporter(cfg, Redactor([]), emit=lambda line: None, listeners=[reports.append], since_ms=2_000)
    batch = lambda n: SimpleNamespace(batchId=n, numInputRows=3, batchDuration=5, durationMs={"addBatch": 1})  # noqa: E731
    reporter.report(SimpleNamespace(recentProgress=[batch(0), batch(1)]))
    assert [r.aborted.get("query_start") for r in reports] == [2, 0]


def test_every_validating_entry_reports_what_the_connectors_refuse(tmp_path, capsys):
    from kafka_eos.connectors.cli import main
    from kafka_eos.connectors.pipeline import entry
    from tests.factories import write
    data = valid(tmp_path)
    data["source"]["kafka"]["properties"] = {"auto.offset.reset": "earliest"}
    for side in ("source", "sink"):
        data[side]["kafka"]["bootstrap_servers"] = "127.0.0.1:1"    # nothing listens: the live check fails fast
    path = str(write(tmp_path, "p.yaml", data))
    needle = "source: the kafka-eos source refuses these settings"
    for run in (lambda: main(["validate", "--offline", path]), lambda: main(["describe", "--offline", path]),
                lambda: main(["run", path, "--timeout", "0.1"]),
                lambda: entry.main(["--config", path, "--timeout", "0.1"])):
        assert run() == 1
        captured = capsys.readouterr()
        assert needle in captured.out + captured.err


def test_submit_passes_verbose_and_the_metrics_port_to_the_entry(tmp_path):
    from kafka_eos.connectors.pipeline import entry
    cmd = submit_command("p.yaml", "yarn", tmp_path / "k.zip", False, None, verbose=True, metrics_port=9500)
    tail = cmd[cmd.index("--config"):]
    assert tail == ["--config", str(Path("p.yaml").resolve()), "--verbose", "--metrics-port", "9500"]
    args = entry.parse_args(tail)
    assert (args.verbose, args.metrics_port, args.once) == (True, 9500, False)
    quiet = submit_command("p.yaml", "yarn", tmp_path / "k.zip", True)
    assert "--verbose" not in quiet and "--metrics-port" not in quiet and "--metrics-host" not in quiet
    bound = submit_command("p.yaml", "yarn", tmp_path / "k.zip", False, None, metrics_port=9500,
                           metrics_host="0.0.0.0")
    assert entry.parse_args(bound[bound.index("--config"):]).metrics_host == "0.0.0.0"


def test_run_with_master_hands_verbose_and_metrics_port_to_submit(tmp_path, monkeypatch):
    """The pipeline is validated here; what reaches spark-submit is its path and the flags."""
    from kafka_eos.connectors import cli
    from kafka_eos.connectors.pipeline import submit as submit_module, validation
    from tests.factories import write
    path = write(tmp_path, "p.yaml", valid(tmp_path))
    cfg, _ = load(tmp_path, valid(tmp_path))
    monkeypatch.setattr(validation, "load_valid", lambda *a, **k: cfg)
    calls = []
    monkeypatch.setattr(submit_module, "submit", lambda *a, **k: calls.append((a, k)) or 0)
    assert cli.main(["run", str(path), "--master", "local[2]", "--verbose", "--metrics-port", "9501",
                     "--metrics-host", "0.0.0.0"]) == 0
    (args, kwargs), = calls
    assert args[:2] == (str(path), "local[2]") and kwargs["verbose"] is True and kwargs["metrics_port"] == 9501
    assert kwargs["metrics_host"] == "0.0.0.0"
