"""A savepoint taken and restored through the ``kafka-eos`` CLI as users run it, each command by the
Python (so the pyspark, Spark home and JVM) of a chosen environment: this venv's or a matrix venv's
(``build/matrix/venv-<version>``) (test_savepoint_versions, test_savepoint_scenarios).

``save_and_restore`` runs savepoint_cells' windowed count (1-minute tumbling windows per page,
watermark 30 s, a late topic, a DLQ; 3 min 20 s of input and 6 undecodable records):

1. ``kafka-eos run old.yaml`` (the saver's), until it committed a batch ending at the input's ends;
   ``kafka-eos savepoint old.yaml`` (the saver's) stops it while windows are open; the driver's JVM
   is checked to load the saver's Spark; the record names its pyspark;
2. a start of the saved checkpoint by the restorer's CLI is refused (exit 5) and writes nothing;
3. more input (3 late records of a closed window among it); ``validate new.yaml --against-savepoint``
   and ``run new.yaml --from-savepoint LOCATION --once`` (the restorer's, its JVM checked) with an
   added output column (savepoint_cells' CHANGED);
4. ``savepoint_cells.check_restored``: every window once, equal to a batch count, by exactly one of
   the two queries; late and undecodable records once.

``records``: the pipelines' ``checkpoint.records`` (``kafka``: the sink log, the savepoint, the stop
request and the restore record in the Kafka record store).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pyspark
import pytest
import yaml

from integration_tests.kafka_tools import end_offsets, produce, unique
from integration_tests.pipeline_cli import REPO, small_spark_conf
from integration_tests.pipeline_runs import kill_group, tail
from integration_tests.savepoint_cells import (CHANGED, MINUTE, SQL, T0, Saved, check_restored, more_input,
                                               new_topics, pipeline_doc, read_through, seed, windows)
from kafka_eos.config.loader import load_text
from kafka_eos.config.records import records_home
from kafka_eos.connectors.pipeline import savepoint
from kafka_eos.connectors.pipeline.progress import sink_log_location
from kafka_eos.connectors.spark_harness import python_env
from kafka_eos.txn.log.savepoints import default_location, read_restore, read_savepoint

TUMBLING = SQL.format(size="1 minute", slide="")
# what a venv's Python says of itself: its pyspark, where it imports kafka-eos from, and the suite's
# fast-JVM settings for ITS Spark (fast_jvms: the Spark home overlay and class archive of its version)
PROBE = """import json, pyspark, kafka_eos.connectors
from integration_tests.fast_jvms import fast_test_jvms
env = {}
fast_test_jvms(env)
print(json.dumps({"pyspark": pyspark.__version__, "connectors": kafka_eos.connectors.__file__, "env": env}))"""
SPARK_CORE = re.compile(r"spark-core_[0-9.]+-(\d+\.\d+\.\d+)\.jar")


@dataclass(frozen=True)
class Cli:
    """The Python a ``kafka-eos`` command runs with, its environment and its pyspark."""
    python: str
    env: dict[str, str]
    pyspark: str

    def start(self, args: list[str], log: Path) -> subprocess.Popen:
        """``kafka-eos <args>`` in the background as its own process group, output to ``log``."""
        with open(log, "ab") as out:
            return subprocess.Popen([self.python, "-m", "kafka_eos.connectors.cli", *args], env=self.env, cwd=REPO,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def run(self, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([self.python, "-m", "kafka_eos.connectors.cli", *args], env=self.env, cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)


def venv(version: str) -> Path:
    return REPO / "build" / "matrix" / f"venv-{version}"


def matrix_python(version: str) -> Path:
    """The Python of the pyspark ``version`` matrix venv; a clear failure when it is missing."""
    python = venv(version) / "bin" / "python"
    build = (f"build it with `make matrix MATRIX_VERSIONS={version}` (or `.venv/bin/python -c \"from "
             f"integration_tests.matrix import venv; venv('{version}')\"`)")
    if not python.is_file():
        pytest.fail(f"{venv(version)}: no venv of pyspark {version}; this test runs kafka-eos in it: {build}",
                    pytrace=False)
    return python


def matrix_cli(version: str, bootstrap: str, checkpoints: Path) -> Cli:
    """The CLI of the pyspark ``version`` matrix venv: this environment without its Spark (SPARK_HOME,
    the driver's class archive, PYSPARK_*), with the venv's, checked to import this checkout."""
    python = matrix_python(version)
    base = {k: v for k, v in python_env().items()
            if k not in ("SPARK_HOME", "SPARK_SUBMIT_OPTS", "PYTHONPATH", "PYTHONHOME", "PYSPARK_PYTHON",
                         "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    probe = subprocess.run([str(python), "-c", PROBE], env=base, cwd=REPO, capture_output=True, text=True,
                           timeout=120)
    assert probe.returncode == 0, f"{python} cannot import pyspark and kafka-eos: {probe.stderr[-2000:]}"
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert found["pyspark"] == version, f"{python} has pyspark {found['pyspark']}, not {version}"
    assert Path(found["connectors"]).resolve().is_relative_to(REPO), (
        f"{python} imports kafka-eos from {found['connectors']}, not this checkout {REPO} (install it editable)")
    env = {**base, **found["env"], "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python),
           "VIRTUAL_ENV": str(venv(version)), "PATH": f"{venv(version) / 'bin'}:{base.get('PATH', '')}",
           "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints)}
    return Cli(str(python), env, version)


def own_cli(bootstrap: str, checkpoints: Path) -> Cli:
    """The CLI of this venv."""
    env = {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints)}
    return Cli(sys.executable, env, pyspark.__version__)


def spark_of(run: subprocess.Popen) -> str | None:
    """The Spark version whose jars the run's driver JVM loads (its ``spark-core`` jar), None before it started."""
    try:
        children = psutil.Process(run.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    for child in children:
        try:
            cmdline = child.cmdline()
        except psutil.Error:
            continue
        if not cmdline or Path(cmdline[0]).name != "java" or "-cp" not in cmdline:
            continue
        names: list[str] = []  # Spark's launcher lists each jar; a classpath may also name a folder's jars/*
        for entry in cmdline[cmdline.index("-cp") + 1].split(":"):
            names += [p.name for p in Path(entry[:-2]).glob("spark-core_*.jar")] if entry.endswith("/*") else [
                Path(entry).name]
        versions = {m.group(1) for name in names if (m := SPARK_CORE.fullmatch(name))}
        if versions:
            return ",".join(sorted(versions))
    return None


def finish(run: subprocess.Popen, log: Path, timeout: float) -> tuple[int, str | None]:
    """Wait for ``run`` (killed after ``timeout``); its exit code and the Spark its JVM loaded."""
    deadline, spark = time.monotonic() + timeout, None
    while run.poll() is None:
        spark = spark or spark_of(run)
        if time.monotonic() > deadline:
            kill_group(run)
            raise AssertionError(f"kafka-eos did not finish within {timeout:.0f} s:\n{tail(log)}")
        time.sleep(0.5)
    return run.returncode, spark


def read_through_while_running(run: subprocess.Popen, log: Path, checkpoint: Path, bootstrap: str, topic: str,
                               timeout_s: float) -> str | None:
    """Until the run committed a batch ending at the input's ends; the Spark its JVM loaded."""
    deadline, spark = time.monotonic() + timeout_s, None
    while True:
        spark = spark or spark_of(run)
        if run.poll() is not None:
            raise AssertionError(f"the run exited ({run.returncode}) before it read the input through:\n{tail(log)}")
        try:
            read_through(str(checkpoint), lambda: end_offsets(bootstrap, topic), 5.0)
            return spark or spark_of(run)
        except AssertionError:
            if time.monotonic() > deadline:
                raise AssertionError(f"the run did not read the input through within {timeout_s:.0f} s:\n"
                                     f"{tail(log)}") from None


def _doc(tmp_path: Path, topics: dict[str, str], checkpoint: str, sql: str, records: str | None,
         prefix: str | None = None) -> dict[str, Any]:
    doc = pipeline_doc(tmp_path, topics, checkpoint, sql, prefix=prefix)
    if records:
        doc["checkpoint"]["records"] = records
    return doc


def _load(doc: dict[str, Any], name: str):
    """The pipeline of ``doc``, loaded as ``kafka-eos`` loads a file (its record store registered)."""
    cfg, problems = load_text(yaml.safe_dump(doc), name)
    assert cfg is not None and not problems, problems
    records_home(cfg)
    return cfg


def _save(saver: Cli, tmp_path: Path, bootstrap: str, records: str | None) -> tuple[Saved, Path]:
    """Steps 1 of the module: the old pipeline run and saved by ``saver``; it and its file."""
    topics = new_topics(bootstrap)
    sent = seed(bootstrap, topics["in"], 0, T0, T0 + 3 * MINUTE + 20_000)
    poison = [f"not a view {k}".encode() for k in range(6)]
    produce(bootstrap, topics["in"], [(b"home" if k % 2 else b"help", v) for k, v in enumerate(poison)],
            transactional=unique("poison"))
    doc = _doc(tmp_path, topics, "cp", TUMBLING, records, prefix=unique("old"))
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(doc))
    old = _load(doc, "old.yaml")
    checkpoint, log = tmp_path / "cp", tmp_path / "old.log"
    run = saver.start(["run", str(path), *small_spark_conf()], log)
    try:
        spark = read_through_while_running(run, log, checkpoint, bootstrap, topics["in"], 300)
        began = time.monotonic()
        save = saver.run(["savepoint", str(path)])
        save_s = time.monotonic() - began
        assert save.returncode == 0, f"{save.stdout}\n{save.stderr}\n{tail(log)}"
        stopped, later = finish(run, log, 120)
        spark = spark or later
    finally:
        kill_group(run)
    assert stopped == 0 and "the run stopped" in save.stdout, f"{stopped}: {save.stdout}\n{tail(log)}"
    assert spark == saver.pyspark, f"the old run's driver JVM loaded Spark {spark}, not {saver.pyspark}"
    location = default_location(sink_log_location(old))
    assert location in save.stdout, save.stdout
    sp = read_savepoint(location)
    assert sp.pyspark == saver.pyspark, f"the savepoint names pyspark {sp.pyspark}"
    assert sp.rewind is not None and sp.watermark_ms > 0 and sp.last_batch >= 2, sp
    emitted_by_old = windows(bootstrap, topics["out"])
    assert emitted_by_old and all(start_ms + MINUTE <= sp.watermark_ms for _, start_ms, _ in emitted_by_old)
    open_at_savepoint = {(p, at - at % MINUTE) for _, p, at in sent if at - at % MINUTE + MINUTE > sp.watermark_ms}
    assert open_at_savepoint, "windows are open at the savepoint"
    took = re.search(r"took ([0-9.]+) s", save.stdout)
    saved = Saved(topics, sent, poison, old, savepoint.Taken(location, sp, True, save_s), save_s, None,
                  save.stdout.splitlines(), emitted_by_old, open_at_savepoint)
    saved.lines.append(f"took {took.group(1) if took else '-1'}")
    return saved, path


def save_and_restore(saver: Cli, restorer: Cli, tmp_path: Path, bootstrap: str,
                     records: str | None = None) -> dict[str, Any]:
    """Steps 1-4 of the module; the figures (windows, records, late, by old and new, seconds)."""
    saved, old_path = _save(saver, tmp_path, bootstrap, records)
    location, sp = saved.done.location, saved.done.savepoint
    refused = restorer.run(["run", str(old_path), "--once", *small_spark_conf()])
    assert refused.returncode == 5 and location in refused.stderr and "--from-savepoint" in refused.stderr, (
        f"{refused.returncode}: {refused.stdout}\n{refused.stderr}")
    assert sorted(windows(bootstrap, saved.topics["out"])) == sorted(saved.emitted_by_old), "the refused start wrote"

    more_input(bootstrap, saved)
    doc = _doc(tmp_path, saved.topics, "cp2", CHANGED, records)
    new_path = tmp_path / "new.yaml"
    new_path.write_text(yaml.safe_dump(doc))
    checked = restorer.run(["validate", str(new_path), "--against-savepoint", location], 120)
    assert checked.returncode == 0 and "refused" not in checked.stdout + checked.stderr, (
        f"{checked.returncode}: {checked.stdout}\n{checked.stderr}")
    assert f"pyspark ({saver.pyspark})" in checked.stdout and "carries over: transform: changed" in checked.stdout, (
        checked.stdout)
    log = tmp_path / "new.log"
    began = time.monotonic()
    run = restorer.start(["run", str(new_path), "--from-savepoint", location, "--once", *small_spark_conf()], log)
    try:
        code, spark = finish(run, log, 500)
    finally:
        kill_group(run)
    restore_s = time.monotonic() - began
    assert code == 0, tail(log)
    assert spark == restorer.pyspark, f"the restore's driver JVM loaded Spark {spark}, not {restorer.pyspark}"
    new = _load(doc, "new.yaml")
    start = read_restore(records_home(new))
    assert start is not None and start.rewind_batch is not None, f"no restore record at {records_home(new)}"
    assert f"replaying from batch {start.rewind_batch}" in log.read_text(), tail(log)

    figures: dict[str, Any] = check_restored(bootstrap, saved)
    figures.update(save_s=round(saved.save_s, 1), save_took_s=float(saved.lines[-1].split()[-1]),
                   restore_s=round(restore_s, 1), rewind_batch=start.rewind_batch, last_batch=sp.last_batch,
                   location=location)
    return figures


def line(figures: dict[str, Any], what: str) -> str:
    """The figures of ``save_and_restore`` as one line."""
    return (f"savepoint {what}: {figures['windows']} windows over {figures['records']} records ({figures['late']} "
            f"late, 6 undecodable), {figures['by_old']} emitted by the old query, {figures['by_new']} by the new "
            f"({figures['open']} open at the savepoint); savepoint {figures['save_s']} s (the command; "
            f"{figures['save_took_s']} s of it saving), restore {figures['restore_s']} s (`run --from-savepoint "
            f"--once`), replay from batch {figures['rewind_batch']} of {figures['last_batch']}")
