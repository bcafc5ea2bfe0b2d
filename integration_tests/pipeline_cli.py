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


def orders_pipeline(tmp_path: Path, topics: tuple[str, str], stem: str, batch: int, trigger: str,
                    sink: dict | None = None) -> Path:
    """orders-json.yaml on topics of its own (``source``, ``sink``): ``batch`` orders a batch, the
    ``trigger``, skip on bad input, a transactional-id prefix of its own; ``sink`` settings over
    the example's. Written as ``<tmp_path>/orders-<stem>.yaml``."""
    import yaml
    from integration_tests.kafka_tools import unique
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [topics[0]], topics[1]
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["source"]["max_offsets_per_trigger"] = batch
    doc["sink"] = {**doc["sink"], "transactional_id_prefix": unique(stem), **(sink or {})}
    doc["checkpoint"]["trigger"] = trigger
    doc["errors"] = {"on_decode_error": "skip"}
    path = tmp_path / f"orders-{stem}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def progress_lines(run: CliRun, pipeline: str) -> list[str]:
    return [l for l in run.stdout.splitlines() if l.startswith(f"kafka-eos {pipeline} batch ")]


def small_spark_conf() -> list[str]:
    """``--conf`` pairs sizing spark-submit runs for a 2-core test machine."""
    from kafka_eos.connectors.spark_harness import SMALL_CONF
    return [arg for key, value in SMALL_CONF.items() for arg in ("--conf", f"{key}={value}")]
