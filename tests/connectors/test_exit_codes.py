"""One table of exit codes (``connectors/exit_codes.py``): every error it names exists and keeps
its code in a query's error text, the commands return its codes, and the docs carry it."""
from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

from kafka_eos import KafkaEosError
from kafka_eos.config.violations import InvalidPipeline, Violation
from kafka_eos.connectors import exit_codes
from kafka_eos.connectors.exit_codes import (CODES, DONE, ERRORS, FAILED, INVALID, NEEDS_OPERATOR, UNAUTHORIZED,
                                             of_error, of_text, permanent)
from kafka_eos.connectors.pipeline.runner import PipelineFailed
from tests.factories import valid, write

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kafka_eos.txn", "kafka_eos.offsets", "kafka_eos.serde", "kafka_eos.config", "kafka_eos.connectors")
SPARK_TEXT = ("org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query [id = 1] terminated "
              "with exception: [PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source "
              "perform commit: Traceback (most recent call last):\n  File \"protocol.py\", line 140, in commit_batch\n"
              "kafka_eos.txn.protocol.errors.{name}: batch 1 cannot be re-written exactly once: ... (runbook: "
              "docs/runbooks.md#{anchor})\n\tat org.apache.spark.sql.execution...")


def errors() -> dict[str, type]:
    for package in PACKAGES:
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            if ".dev" not in info.name and "demo" not in info.name:
                importlib.import_module(info.name)
    found: dict[str, type] = {}
    todo = [KafkaEosError]
    while todo:
        klass = todo.pop()
        found[klass.__name__] = klass
        todo += klass.__subclasses__()
    return found


def test_every_named_error_exists_and_its_subclasses_are_named_with_its_code():
    known = errors()
    assert set(ERRORS) <= set(known), f"not an error of kafka-eos: {set(ERRORS) - set(known)}"
    for name, klass in known.items():
        inherited = next((ERRORS[k.__name__] for k in klass.__mro__[1:] if k.__name__ in ERRORS), None)
        if inherited is not None:  # a query's error text names the class raised, not its bases
            assert ERRORS.get(name) is inherited, f"{name} inherits {inherited.name}: list it in ERRORS"


def test_codes_are_distinct_and_only_invalid_unauthorized_and_needs_an_operator_stop_a_supervisor():
    assert len({c.code for c in CODES}) == len(CODES) and [c.code for c in CODES] == list(range(9))
    assert {c.code for c in CODES if permanent(c.code)} == {1, 3, 5}
    assert not any(permanent(code) for code in (0, 2, 4, 137, 143, -9))


@pytest.mark.parametrize("name, code", [
    ("ReplayMismatchError", 5), ("CheckpointRetiredError", 5), ("PrefixClaimedError", 5), ("OutputTopicChangedError", 5),
    ("TransactionLostError", 4), ("OutputTopicCheckError", 4), ("ProducerFencedError", 4),
    ("AclMissingError", 3), ("SinkConfigError", 1)])
def test_a_query_error_spark_hands_over_as_text_gets_the_code_of_its_class(name, code):
    assert of_text(SPARK_TEXT.format(name=name, anchor=name.lower())) == code
    klass = errors()[name]
    assert of_error(klass.__new__(klass)) == code  # the exception itself (its constructor's arguments vary)


def test_a_name_in_prose_or_an_anchor_is_not_an_error_and_the_file_is_fixed_first():
    assert of_text("TransactionLostError: batch 2 ... see ReplayMismatchError (runbook: "
                   "docs/runbooks.md#replaymismatcherror)") == FAILED.code
    assert of_text("a.ReplayMismatchError: x\nb.SinkConfigError: y") == INVALID.code
    assert of_text("b.TopicAuthorizationError: y\nc.KafkaDataLossError: z") == UNAUTHORIZED.code
    assert of_text("") == FAILED.code


def test_errors_carry_their_code_and_anything_else_is_a_transient_failure():
    assert of_error(PipelineFailed("x", NEEDS_OPERATOR.code)) == 5 and of_error(PipelineFailed("x")) == 4
    assert of_error(InvalidPipeline([Violation("sink", "m", "f", kind="unreachable")])) == 2
    assert of_error(RuntimeError("the JVM died")) == FAILED.code and of_error(OSError()) == 4
    from kafka_eos.connectors.pipeline.stop import StopRequested
    assert of_error(StopRequested("stands")) == DONE.code


# -- the command line returns the table's codes ----------------------------------------------------

@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    from kafka_eos.connectors.pipeline import held_states, validation
    from tests.factories import load
    cfg, _ = load(tmp_path, valid(tmp_path))
    monkeypatch.setattr(validation, "load_valid", lambda *a, **k: cfg)
    return write(tmp_path, "p.yaml", valid(tmp_path)), cfg, held_states


@pytest.mark.parametrize("raised, code", [
    (PipelineFailed("pipeline t failed: ReplayMismatchError: batch 1", 5), 5),
    (PipelineFailed("pipeline t failed: TransactionLostError: batch 1"), 4),
    (RuntimeError("Java gateway process exited"), 4),  # was Python's own 1: "invalid", never restarted by systemd
])
def test_run_exits_with_the_failures_code(pipeline, monkeypatch, capsys, raised, code):
    from kafka_eos.connectors import cli
    from kafka_eos.connectors.pipeline import runner
    path, _, _ = pipeline

    def fail(*a, **k):
        raise raised
    monkeypatch.setattr(runner, "run_local", fail)
    assert cli.main(["run", str(path)]) == code
    assert str(raised).split(":")[0] in capsys.readouterr().err


def test_run_refuses_a_held_start_before_spark(pipeline, monkeypatch, capsys):
    from kafka_eos.connectors import cli
    from kafka_eos.connectors.pipeline import runner
    from kafka_eos.connectors.pipeline.stop import request_stop, withdraw_stop
    path, cfg, _ = pipeline
    monkeypatch.setattr(runner, "run_local", lambda *a, **k: pytest.fail("Spark started"))
    request_stop(str(cfg.checkpoint.location))
    assert cli.main(["run", str(path), "--restarts", "3"]) == 0, "stopped by request"
    assert "a stop was requested" in capsys.readouterr().err
    withdraw_stop(str(cfg.checkpoint.location))
    monkeypatch.setattr(runner, "run_local", lambda *a, **k: runner.RunResult("t", exit_code=143))
    assert cli.main(["run", str(path)]) == 143, "a run a signal stopped: 128 + SIGTERM"


def test_a_command_line_argparse_refuses_is_invalid_not_unreachable(capsys):
    from kafka_eos.connectors import cli
    with pytest.raises(SystemExit) as exited:
        cli.main(["stop"])
    assert exited.value.code == INVALID.code and "required" in capsys.readouterr().err
    assert cli.main(["run"]) == INVALID.code  # no file and no --watch: refused by kafka-eos itself
    assert "no pipeline file" in capsys.readouterr().err


# -- the docs carry the table -----------------------------------------------------------------------

def block(path: str, marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n?(.*?)\n?<!-- /{marker} -->", (ROOT / path).read_text(), re.DOTALL)
    assert found, f"{path} lost its <!-- {marker} --> block"
    return found.group(1).strip()


def test_the_deploy_guide_carries_the_table_and_readme_its_summary():
    assert block("docs/deploy.md", "exit-codes") == exit_codes.table(), (
        "regenerate: python -c 'from kafka_eos.connectors.exit_codes import table; print(table())'")
    assert " ".join(block("README.md", "exit-codes").split()) == exit_codes.summary()


def test_the_supervisors_in_the_deploy_guide_stop_on_the_permanent_codes_only():
    text = (ROOT / "docs/deploy.md").read_text()
    codes = sorted(c.code for c in CODES if permanent(c.code))
    assert re.findall(r"^RestartPreventExitStatus=(.*?)\s*(?:#.*)?$", text, re.M) == [" ".join(map(str, codes))]
    assert re.findall(r"values: \[([\d, ]+)\]", text) == [", ".join(map(str, codes))]


def test_the_deploy_guides_executor_packages_are_readmes():
    """README's list is the truth (tests/connectors/test_executor_deps.py); the guide had lost
    numpy, xxhash and tenacity, and named driver-only packages."""
    def names(path: str) -> set[str]:
        return set(re.findall(r"`([\w\-\[\]]+)`", block(path, "executor-deps")))
    assert names("docs/deploy.md") == names("README.md")
