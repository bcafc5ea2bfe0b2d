"""Savepoints (issue 65) across pyspark versions: a savepoint taken on pyspark 4.1 and restored on 4.3,
on the real broker and Spark, through the ``kafka-eos`` CLI as users run it.

- The old pipeline (savepoint_cells' 1-minute tumbling count per page, watermark 30 s, a late topic
  and a DLQ) runs under pyspark 4.1.4: ``kafka-eos run`` with the Python of the matrix venv
  ``build/matrix/venv-4.1.4`` (its own Spark home, JVM and Python workers; the driver's JVM is
  checked to load Spark 4.1.4's jars). Once it read the input through, ``kafka-eos savepoint`` (from
  the same venv) stops it while windows are open; the record names pyspark 4.1.4.
- A start of the saved checkpoint on pyspark 4.3 is refused (exit 5, naming the savepoint).
- More input arrives (3 late records of a closed window among it); the changed pipeline (an added
  output column, savepoint_cells' CHANGED) is validated against the savepoint and restored with
  ``kafka-eos run --from-savepoint --once`` from this venv (pyspark 4.3; its JVM checked too).
- The checks of the other savepoint tests (``savepoint_cells.check_restored``): every window the
  final watermark closed equals a batch count over the whole input, once (read_committed), the
  closed ones emitted by the old query and the open ones by the new; late records once; the DLQ once.

It prints (and records, ``record_property``) its figures: windows, records, seconds to savepoint
and to restore. The 4.1.4 venv is built by ``make matrix`` (``integration_tests.matrix.venv``);
without it the test fails, saying so.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pyspark
import pytest
import yaml

from integration_tests.kafka_tools import end_offsets, produce, unique
from integration_tests.pipeline_cli import REPO, small_spark_conf
from integration_tests.pipeline_runs import kill_group, tail
from integration_tests.savepoint_cells import (CHANGED, MINUTE, SQL, T0, Saved, check_restored, more_input,
                                               new_topics, pipeline, pipeline_doc, read_through, seed, windows)
from kafka_eos.connectors.pipeline import savepoint
from kafka_eos.connectors.pipeline.savepoint_check import against
from kafka_eos.connectors.spark_harness import python_env
from kafka_eos.txn.log.savepoints import default_location, read_restore, read_savepoint

OLD_PYSPARK = "4.1.4"
OLD_VENV = REPO / "build" / "matrix" / f"venv-{OLD_PYSPARK}"
TUMBLING = SQL.format(size="1 minute", slide="")
# what the old venv's Python says of itself: its pyspark, where it imports kafka-eos from, and the
# suite's fast-JVM settings for ITS Spark (fast_jvms: the Spark home overlay and class archive of 4.1.4)
PROBE = """import json, pyspark, kafka_eos.connectors
from integration_tests.fast_jvms import fast_test_jvms
env = {}
fast_test_jvms(env)
print(json.dumps({"pyspark": pyspark.__version__, "connectors": kafka_eos.connectors.__file__, "env": env}))"""
SPARK_CORE = re.compile(r"spark-core_[0-9.]+-(\d+\.\d+\.\d+)\.jar")


def old_python() -> Path:
    """The Python of the pyspark 4.1.4 venv; a clear failure when it is missing or not what it should be."""
    python = OLD_VENV / "bin" / "python"
    build = (f"build it with `make matrix MATRIX_VERSIONS={OLD_PYSPARK}` (or `.venv/bin/python -c \"from "
             f"integration_tests.matrix import venv; venv('{OLD_PYSPARK}')\"`)")
    if not python.is_file():
        pytest.fail(f"{OLD_VENV}: no venv of pyspark {OLD_PYSPARK}; this test runs the old pipeline in it: {build}",
                    pytrace=False)
    return python


def old_env(python: Path, bootstrap: str, checkpoints: Path) -> dict[str, str]:
    """The environment of a ``kafka-eos`` command run with the 4.1.4 venv's Python: this one's
    without its Spark (SPARK_HOME, the driver's class archive, PYSPARK_*), with the 4.1.4 venv's."""
    base = {k: v for k, v in python_env().items()
            if k not in ("SPARK_HOME", "SPARK_SUBMIT_OPTS", "PYTHONPATH", "PYTHONHOME", "PYSPARK_PYTHON",
                         "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    probe = subprocess.run([str(python), "-c", PROBE], env=base, cwd=REPO, capture_output=True, text=True,
                           timeout=120)
    assert probe.returncode == 0, f"{python} cannot import pyspark and kafka-eos: {probe.stderr[-2000:]}"
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert found["pyspark"] == OLD_PYSPARK, f"{python} has pyspark {found['pyspark']}, not {OLD_PYSPARK}"
    assert Path(found["connectors"]).resolve().is_relative_to(REPO), (
        f"{python} imports kafka-eos from {found['connectors']}, not this checkout {REPO} (install it editable)")
    return {**base, **found["env"], "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python),
            "VIRTUAL_ENV": str(OLD_VENV), "PATH": f"{OLD_VENV / 'bin'}:{base.get('PATH', '')}",
            "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints)}


def new_env(bootstrap: str, checkpoints: Path) -> dict[str, str]:
    return {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints)}


def start(python: Path | str, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """``kafka-eos <args>`` with ``python``, in the background as its own process group, output to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen([str(python), "-m", "kafka_eos.connectors.cli", *args], env=env, cwd=REPO,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


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
            raise AssertionError(f"the pyspark {OLD_PYSPARK} run exited ({run.returncode}) before it read the input "
                                 f"through:\n{tail(log)}")
        try:
            read_through(str(checkpoint), lambda: end_offsets(bootstrap, topic), 5.0)
            return spark or spark_of(run)
        except AssertionError:
            if time.monotonic() > deadline:
                raise AssertionError(f"the pyspark {OLD_PYSPARK} run did not read the input through within "
                                     f"{timeout_s:.0f} s:\n{tail(log)}") from None


@pytest.mark.slow  # about 3 minutes: the old pipeline on pyspark 4.1.4 until the savepoint, the restore on 4.3
@pytest.mark.chaos  # make chaos KIND=pipeline
def test_a_savepoint_taken_on_pyspark_4_1_restored_on_4_3_emits_every_window_once(bootstrap, tmp_path,
                                                                                   record_property):
    python = old_python()
    assert pyspark.__version__.startswith("4.3."), f"the restore runs on this venv's pyspark: {pyspark.__version__}"
    env41, env43 = old_env(python, bootstrap, tmp_path), new_env(bootstrap, tmp_path)

    # the old pipeline's input: 3 min 20 s of views and 6 undecodable records (savepoint_cells.run_and_save's)
    topics = new_topics(bootstrap)
    sent = seed(bootstrap, topics["in"], 0, T0, T0 + 3 * MINUTE + 20_000)
    poison = [f"not a view {k}".encode() for k in range(6)]
    produce(bootstrap, topics["in"], [(b"home" if k % 2 else b"help", v) for k, v in enumerate(poison)],
            transactional=unique("poison"))
    old_doc = pipeline_doc(tmp_path, topics, "cp", TUMBLING, prefix=unique("old"))
    old_path = tmp_path / "old.yaml"
    old_path.write_text(yaml.safe_dump(old_doc))
    old = pipeline(tmp_path, topics, "cp", TUMBLING, prefix=old_doc["sink"]["transactional_id_prefix"])
    checkpoint, old_log = tmp_path / "cp", tmp_path / "old.log"

    # 1. `kafka-eos run` on pyspark 4.1.4, stopped by `kafka-eos savepoint` (4.1.4) once it read the input through
    run = start(python, ["run", str(old_path), *small_spark_conf()], env41, old_log)
    try:
        old_spark = read_through_while_running(run, old_log, checkpoint, bootstrap, topics["in"], 300)
        began = time.monotonic()
        save = subprocess.run([str(python), "-m", "kafka_eos.connectors.cli", "savepoint", str(old_path)], env=env41,
                              cwd=REPO, capture_output=True, text=True, timeout=300)
        save_s = time.monotonic() - began
        assert save.returncode == 0, f"{save.stdout}\n{save.stderr}\n{tail(old_log)}"
        stopped, later = finish(run, old_log, 120)
        old_spark = old_spark or later
    finally:
        kill_group(run)
    assert stopped == 0 and "the run stopped" in save.stdout, f"{stopped}: {save.stdout}\n{tail(old_log)}"
    assert old_spark == OLD_PYSPARK, f"the old run's driver JVM loaded Spark {old_spark}, not {OLD_PYSPARK}"
    took = re.search(r"took ([0-9.]+) s", save.stdout)
    location = default_location(str(checkpoint / "kafka-eos-sink"))
    assert location in save.stdout, save.stdout
    sp = read_savepoint(location)
    assert sp.pyspark == OLD_PYSPARK, f"the savepoint names pyspark {sp.pyspark}"
    assert sp.rewind is not None and sp.watermark_ms > 0 and sp.last_batch >= 2, sp
    emitted_by_old = windows(bootstrap, topics["out"])
    assert emitted_by_old and all(start_ms + MINUTE <= sp.watermark_ms for _, start_ms, _ in emitted_by_old)
    open_at_savepoint = {(p, at - at % MINUTE) for _, p, at in sent if at - at % MINUTE + MINUTE > sp.watermark_ms}
    assert open_at_savepoint, "windows are open at the savepoint"
    saved = Saved(topics, sent, poison, old, savepoint.Taken(location, sp, True, save_s), save_s, None,
                  save.stdout.splitlines(), emitted_by_old, open_at_savepoint)

    # 2. a start of the saved checkpoint on pyspark 4.3 is refused before anything is written
    refused = subprocess.run([sys.executable, "-m", "kafka_eos.connectors.cli", "run", str(old_path), "--once",
                              *small_spark_conf()], env=env43, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 5 and location in refused.stderr and "--from-savepoint" in refused.stderr, (
        f"{refused.returncode}: {refused.stdout}\n{refused.stderr}")
    assert sorted(windows(bootstrap, topics["out"])) == sorted(emitted_by_old), "the refused start wrote something"

    # 3. more input (late records among it), then the changed pipeline restored on pyspark 4.3
    more_input(bootstrap, saved)
    new_path = tmp_path / "new.yaml"
    new_path.write_text(yaml.safe_dump(pipeline_doc(tmp_path, topics, "cp2", CHANGED)))
    new = pipeline(tmp_path, topics, "cp2", CHANGED)
    code, text = against(new, location, offline=False)
    assert code == 0 and "refused" not in text and f"pyspark ({OLD_PYSPARK})" in text, text
    new_log = tmp_path / "new.log"
    began = time.monotonic()
    restore_run = start(sys.executable, ["run", str(new_path), "--from-savepoint", location, "--once",
                                         *small_spark_conf()], env43, new_log)
    try:
        restored, new_spark = finish(restore_run, new_log, 500)
    finally:
        kill_group(restore_run)
    restore_s = time.monotonic() - began
    assert restored == 0, tail(new_log)
    assert new_spark == pyspark.__version__, f"the restore's driver JVM loaded Spark {new_spark}"
    start_record = read_restore(str(tmp_path / "cp2"))
    assert start_record is not None and start_record.rewind_batch is not None
    assert f"replaying from batch {start_record.rewind_batch}" in new_log.read_text(), tail(new_log)

    figures = check_restored(bootstrap, saved)
    figures.update(save_s=round(save_s, 1), save_took_s=float(took.group(1)) if took else -1.0,
                   restore_s=round(restore_s, 1), rewind_batch=start_record.rewind_batch, last_batch=sp.last_batch)
    for name, value in figures.items():
        record_property(name, value)
    print(f"savepoint pyspark {OLD_PYSPARK} -> {pyspark.__version__}: {figures['windows']} windows over "
          f"{figures['records']} records ({figures['late']} late, {len(poison)} undecodable), {figures['by_old']} "
          f"emitted by the old query, {figures['by_new']} by the new ({figures['open']} open at the savepoint); "
          f"savepoint {save_s:.1f} s (the command; {figures['save_took_s']} s of it saving), restore {restore_s:.1f} s "
          f"(`run --from-savepoint --once`), replay from batch {start_record.rewind_batch} of {sp.last_batch}")
