"""A secured pipeline run with a known password leaves it nowhere: not in the driver's output,
Spark's event log (its environment and conf dump, query plans), ``kafka-eos describe``, the
spark-submit command line of the child process, or any file under the checkpoint directory."""
from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from integration_tests.kafka_tools import assert_exactly_once
from integration_tests.pipeline_cli import kafka_eos, small_spark_conf
from integration_tests.secured_cluster import (ETL_PASSWORD, check_exactly_once_as_admin, run_secured, secured_broker,
                                               secured_pipeline, seed_orders)

__all__ = ["secured_broker"]


class CommandLines(threading.Thread):
    """Every process command line seen (``ps``) while a run lasts."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: set[str] = set()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.3):
            out = subprocess.run(["ps", "-eww", "-o", "args="], capture_output=True, text=True).stdout
            self.seen |= set(out.splitlines())

    def stop(self) -> set[str]:
        self.done.set()
        self.join(5)
        return self.seen


def files_with(root: Path, secret: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_the_password_appears_in_no_output_log_command_line_or_checkpoint_file(secured_broker, tmp_path):
    path, names = secured_pipeline(secured_broker, tmp_path)
    seed_orders(secured_broker, names["input"], "leak", 500)
    events = tmp_path / "events"
    events.mkdir()
    conf = [*small_spark_conf(), "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events}"]
    watcher = CommandLines()
    watcher.start()
    try:
        run = run_secured(secured_broker, path, tmp_path, ("--master", "local[2]", *conf))
    finally:
        command_lines = watcher.stop()
    assert run.code == 0, run.log()
    assert_exactly_once(check_exactly_once_as_admin(secured_broker, names["output"],  # make test's SASL_SSL count
                                                    expected={f"leak-{i}" for i in range(500)},
                                                    id_of=lambda m: json.loads(m.value())["order_id"]))
    assert any("spark-submit" in line or "SparkSubmit" in line for line in command_lines), "the child was seen"

    env = {"KAFKA_USERNAME": "etl", "KAFKA_PASSWORD": ETL_PASSWORD}
    described = kafka_eos(["describe", str(path)], secured_broker.bootstrap, tmp_path / "checkpoints", env=env)
    assert described.code == 0, described.log()
    assert "sasl.password" in described.stdout, "describe shows the setting (redacted)"

    leaks = {
        "run stdout/stderr": ETL_PASSWORD in run.stdout + run.stderr,
        "describe output": ETL_PASSWORD in described.stdout + described.stderr,
        "command lines": [line[:120] for line in command_lines if ETL_PASSWORD in line],
        "event log": files_with(events, ETL_PASSWORD),
        "checkpoint files": files_with(tmp_path / "checkpoints", ETL_PASSWORD),
    }
    assert list(events.iterdir()), "Spark wrote an event log"
    assert leaks == {"run stdout/stderr": False, "describe output": False, "command lines": [], "event log": [],
                     "checkpoint files": []}, leaks
