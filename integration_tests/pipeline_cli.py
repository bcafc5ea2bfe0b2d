"""Run the ``kafka-eos`` CLI as users do (a subprocess of this venv's Python) against the test broker."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kafka_eos.connectors.spark_harness import python_env

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "config" / "pipelines"


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str

    def log(self, lines: int = 40) -> str:
        keep = [l for l in (self.stdout + "\n" + self.stderr).splitlines() if "\tat " not in l]
        return "\n".join(keep[-lines:])


def kafka_eos(args: list[str], bootstrap: str, checkpoints: Path, timeout: float = 500,
              env: dict[str, str] | None = None) -> CliRun:
    """``kafka-eos <args>`` with the examples' ``${KAFKA_BOOTSTRAP_SERVERS}`` and
    ``${KAFKA_EOS_CHECKPOINTS}`` pointing at the test broker and a test directory."""
    proc = subprocess.run([sys.executable, "-m", "kafka_eos.connectors.cli", *args], env=_env(bootstrap, checkpoints, env),
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


def _env(bootstrap: str, checkpoints: Path, env: dict[str, str] | None) -> dict[str, str]:
    return {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints),
            **(env or {})}


def start_kafka_eos(args: list[str], bootstrap: str, checkpoints: Path, log: Path,
                    env: dict[str, str] | None = None) -> subprocess.Popen:
    """``kafka-eos <args>`` in the background as its own process group (``pipeline_runs.kill_group``
    kills it with its JVM), output to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "kafka_eos.connectors.cli", *args],
                                env=_env(bootstrap, checkpoints, env), cwd=REPO, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def progress_lines(run: CliRun, pipeline: str) -> list[str]:
    return [l for l in run.stdout.splitlines() if l.startswith(f"kafka-eos {pipeline} batch ")]


def small_spark_conf() -> list[str]:
    """``--conf`` pairs sizing spark-submit runs for a 2-core test machine."""
    from kafka_eos.connectors.spark_harness import SMALL_CONF
    return [arg for key, value in SMALL_CONF.items() for arg in ("--conf", f"{key}={value}")]
