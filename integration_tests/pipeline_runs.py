"""Run the test job through real spark-submit as its own process group, and kill it on cue."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from kafka_eos.connectors.spark_harness import SMALL_CONF, python_env, spark_submit_binary
from integration_tests.kafka_tools import ABORTED_BASE, create_topic, produce, unique
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.offsets import model

JOB = Path(__file__).parent / "jobs" / "eos_pipeline.py"


def seed_input(bootstrap: str, topic: str, ids: int, partitions: int = 3) -> None:
    """ids 0..ids-1 in committed transactions and plain writes; ABORTED_BASE+ in aborted ones."""
    create_topic(bootstrap, topic, partitions=partitions)
    step = max(1, ids // 6)
    for n, start in enumerate(range(0, ids, step)):
        chunk = [(str(i).encode(), str(i).encode()) for i in range(start, min(ids, start + step))]
        if n % 3 == 2:
            produce(bootstrap, topic, chunk)
        else:
            produce(bootstrap, topic, chunk, transactional=unique("in"))
        bad = [(str(i).encode(), str(i).encode()) for i in range(ABORTED_BASE + start, ABORTED_BASE + start + 20)]
        produce(bootstrap, topic, bad, transactional=unique("in-abort"), commit=False)


def start_job(args: list[str], log: Path, master: str = "local[2,3]") -> subprocess.Popen:
    cmd = [spark_submit_binary(), "--master", master]
    for key, value in SMALL_CONF.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(JOB), *args]
    out = open(log, "ab")
    return subprocess.Popen(cmd, env=python_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(path_glob: tuple[Path, str], proc: subprocess.Popen, timeout: float, log: Path) -> Path:
    directory, pattern = path_glob
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(directory.glob(pattern))
        if found:
            return found[0]
        if proc.poll() is not None:
            raise AssertionError(f"job exited ({proc.returncode}) before {pattern}:\n{tail(log)}")
        time.sleep(0.2)
    kill_group(proc)
    raise AssertionError(f"no {pattern} within {timeout}s:\n{tail(log)}")


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


def run_to_completion(args: list[str], log: Path, timeout: float = 400, master: str = "local[2,3]") -> None:
    proc = start_job(args, log, master)
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise AssertionError(f"job did not finish in {timeout}s:\n{tail(log)}")
    assert rc == 0, f"job failed ({rc}):\n{tail(log)}"


def killed_at_then_finished(args: list[str], point: str, directory: Path, log: Path,
                            restart_master: str = "local[2,3]") -> list:
    """Run the job until fault ``point`` (``name@batch``) pauses it, kill it, run it again to the
    end (on ``restart_master``); the sink log's batch records of ``<directory>/checkpoint``, in order."""
    from kafka_eos.txn.log.sink_log import SinkLogReader
    faults = directory / "faults"
    faults.mkdir(exist_ok=True)
    proc = start_job(args + ["--fault", point, "--fault-dir", str(faults)], log)
    wait_for((faults, point.split("@")[0] + ".*"), proc, 300, log)
    kill_group(proc)
    run_to_completion(args, log, master=restart_master)
    reader = SinkLogReader(str(directory / "checkpoint" / "kafka-eos-sink"))
    return [record for record in map(reader.get, range(50)) if record is not None]


def tail(log: Path, lines: int = 60) -> str:
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    keep = [l for l in text if not l.startswith("%") and "\tat " not in l]
    return "\n".join(keep[-lines:])


def planned_start(checkpoint: Path) -> dict[int, int]:
    """partition -> first offset of the query, as batch 0's end in Spark's offset log records it
    (one source; ``kafka_eos.offsets.model.planned_start``)."""
    entry = CheckpointReader(str(checkpoint)).offsets(0)
    assert entry is not None and entry.sources, f"no offset-log entry of batch 0 in {checkpoint}"
    stored = json.loads(entry.sources[-1])
    start = model.planned_start(stored)
    assert start is not None, f"batch 0's end does not record the start it was planned with: {stored}"
    return {partition: offset for (_, partition), offset in start.items()}


def wait_dead(process: psutil.Process, bound_s: float = 30.0) -> None:
    """Until ``process`` is gone or a zombie (its parent, frozen, has not reaped it)."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.1)
    raise AssertionError(f"process {process.pid} still running {bound_s} s after SIGKILL")


def kill_supervised_run(supervisor: subprocess.Popen, faults: Path, point: str, log: Path,
                        freeze_supervisor: bool = False) -> None:
    """Once the run that ``kafka-eos run --restarts`` supervises reaches fault ``point``, SIGKILL
    its process group (its Python driver, the JVM and the workers) and wait until it is dead;
    ``freeze_supervisor`` SIGSTOPs the supervisor first, so it restarts the run only once resumed."""
    wait_for((faults, f"{point}.*"), supervisor, 400, log)
    [child] = psutil.Process(supervisor.pid).children()
    if freeze_supervisor:
        supervisor.send_signal(signal.SIGSTOP)
    os.killpg(child.pid, signal.SIGKILL)
    wait_dead(child)
