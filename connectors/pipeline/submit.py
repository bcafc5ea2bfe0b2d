"""Run a pipeline through ``spark-submit`` on any master, shipping kafka-eos as a zip.

    spark-submit --master <url> --py-files <tmp>/kafka_eos.zip \\
        <site-packages>/connectors/pipeline/entry.py --config <pipeline.yaml> [--config <more.yaml> ...] [--once] [--verbose] \\
        [--metrics-port PORT] [--metrics-host HOST]

Invariants:
- The zip holds the ``kafka_eos`` namespace (``kafka_eos/txn``, ``kafka_eos/connectors``, …: sources
  and package data, no bytecode, no dev tooling), so executors import the same kafka-eos as the driver even where
  it is not installed; the executors' third-party dependencies (README's executor-deps list:
  pyarrow, numpy, xxhash, confluent-kafka, fastavro, tenacity) must be on the cluster's Python
  (e.g. the docker/ job image), as the driver's (pyyaml, kafka-python, prometheus-client, pandas)
  on this one's.
- The pipeline file is read by the driver (client deploy mode: this machine), with this
  process's environment for its ``${VARS}``; schema files are read there too and shipped as text.
- Every line spark-submit prints goes through the pipeline's redactor before it reaches our
  stdout/stderr, so no secret of the pipeline is shown, whatever logged it.
- The driver's console is what ``kafka-eos run`` has in this process (``console.submit_env``):
  quiet unless ``verbose``. The command line carries the pipeline's path and flags, never a
  setting of the file (secrets stay in the file and the environment, read by the driver).
- On a local master the task workers fork from kafka-eos's Python daemon (``worker_daemon``)
  unless ``conf`` names a daemon module.
- The driver JVM maps this user's class-data archive, or writes it at a clean exit
  (``driver_archive``).
- SIGTERM or SIGINT to ``kafka-eos run --master`` stops the driver after its running batch
  (``SignalStop``: the stop marker), then exits 128 + the signal's number.
- The exit code is spark-submit's, which is the entry's (``entry``: the ``exit_codes`` table), so a
  supervisor reads the same codes as for a run in this process.
"""
from __future__ import annotations

import importlib
import signal
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import IO, Iterable, Mapping, Sequence

from kafka_eos.config.redact import Redactor
from kafka_eos.connectors.pipeline import compiled_pyspark, driver_archive
from kafka_eos.connectors.pipeline.console import quiet_environment, submit_env
from kafka_eos.connectors.spark_harness import python_env, spark_submit_binary
from kafka_eos.connectors.worker_daemon import daemon_conf

PACKAGES = ("kafka_eos", "kafka_eos.txn", "kafka_eos.offsets", "kafka_eos.serde", "kafka_eos.config",
            "kafka_eos.connectors")
NOT_SHIPPED = ("kafka_eos.connectors.dev", "kafka_eos.connectors.demo", "kafka_eos.connectors.demo_data")
ENTRY = Path(__file__).with_name("entry.py")


def package_dir(package: str) -> Path:
    """Where ``package`` is on disk (its folder in a checkout or in site-packages)."""
    file = importlib.import_module(package).__file__
    if file is None:  # a namespace package has no __file__
        raise TypeError(f"package {package!r} has no __init__.py, so no folder to ship; add one")
    return Path(file).resolve().parent


def _shipped(package: str, root: Path, path: Path) -> bool:
    if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
        return False
    if any(part in (".pytest_cache",) for part in path.parts):
        return False
    module = ".".join((package, *path.relative_to(root).with_suffix("").parts))
    return not any(module == skip or module.startswith(skip + ".") for skip in NOT_SHIPPED)


def build_zip(directory: Path, packages: Iterable[str] = PACKAGES) -> Path:
    """``<directory>/kafka_eos.zip``: each package's files under its dotted name (``kafka_eos/txn/…``),
    dev tooling left out; deterministic order."""
    target = directory / "kafka_eos.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in packages:
            root, prefix = package_dir(package), Path(*package.split("."))
            # the other packages below this one's folder (installed: kafka_eos/config inside kafka_eos/)
            nested = {d for d in (package_dir(p) for p in packages if p != package) if root in d.parents}
            for path in sorted(root.rglob("*")):
                if any(n == path or n in path.parents for n in nested):
                    continue
                if _shipped(package, root, path):
                    archive.write(path, (prefix / path.relative_to(root)).as_posix())
    return target


def submit_command(pipeline: str | Path | Sequence[str | Path], master: str, zip_path: Path, once: bool,
                   conf: Mapping[str, str] | None = None, name: str = "kafka-eos", verbose: bool = False,
                   metrics_port: int | None = None, metrics_host: str | None = None) -> list[str]:
    cmd = [spark_submit_binary(), "--master", master, "--name", name, "--py-files", str(zip_path)]
    for key, value in (conf or {}).items():
        cmd += ["--conf", f"{key}={value}"]
    pipelines = [pipeline] if isinstance(pipeline, (str, Path)) else list(pipeline)  # several: a group
    cmd += [str(ENTRY)] + [arg for path in pipelines for arg in ("--config", str(Path(path).resolve()))]
    cmd += ["--once"] if once else []
    cmd += ["--verbose"] if verbose else []
    cmd += ["--metrics-port", str(metrics_port)] if metrics_port is not None else []
    return cmd + (["--metrics-host", metrics_host] if metrics_host else [])


def _pump(source: IO[str], sink: IO[str], redact: Redactor) -> None:
    for line in source:
        sink.write(redact(line.rstrip("\n")) + "\n")
        sink.flush()


def submit(pipeline: str | Path | Sequence[str | Path], master: str, redact: Redactor, once: bool = False,
           conf: Mapping[str, str] | None = None, name: str = "kafka-eos",
           stdout: IO[str] | None = None, stderr: IO[str] | None = None, verbose: bool = False,
           metrics_port: int | None = None, metrics_host: str | None = None, stop_home: str | Sequence[str] | None = None) -> int:
    """Run the pipeline with spark-submit; stream its output (redacted); return its exit code (128 + N
    when signal N stopped it: ``SignalStop``)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    quiet_environment(master, verbose)
    conf = {**daemon_conf(master, conf), **(conf or {})}
    env = compiled_pyspark.with_spark_home(python_env())
    archive = driver_archive.plan(env)
    with tempfile.TemporaryDirectory(prefix="kafka-eos-submit-") as tmp:
        cmd = submit_command(pipeline, master, build_zip(Path(tmp)), once, conf, name, verbose, metrics_port,
                             metrics_host)
        proc = subprocess.Popen(cmd, env=submit_env(verbose, driver_archive.with_archive(env, archive)),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1)
        pumps = [threading.Thread(target=_pump, args=(proc.stdout, stdout, redact), daemon=True),
                 threading.Thread(target=_pump, args=(proc.stderr, stderr, redact), daemon=True)]
        for pump in pumps:
            pump.start()
        with SignalStop(proc, stop_home) as signalled:
            try:
                code = proc.wait()
            except KeyboardInterrupt:
                proc.terminate()
                code = proc.wait()
        for pump in pumps:
            pump.join(10)
        archive.install()
        return signalled.code(code)


class SignalStop:
    """SIGTERM or SIGINT to this process (a supervisor's or a platform's stop, which reaches only the
    process it started) stops the driver spark-submit runs as its own signal would: the stop marker
    in ``stop_home``, where the pipeline keeps its stop files (``stop``), honoured after the running
    batch; a second signal terminates spark-submit. The exit code is then 128 + the first signal's
    number. Outside the main thread, or without a ``stop_home``, signals keep Python's handling."""

    def __init__(self, proc: subprocess.Popen, stop_home: str | Sequence[str] | None) -> None:
        self.proc = proc
        self.homes = [stop_home] if isinstance(stop_home, str) else list(stop_home or [])  # a group: one per pipeline
        self.signum: int | None = None
        self._saved: dict[int, object] = {}

    def __enter__(self) -> "SignalStop":
        if self.homes and threading.current_thread() is threading.main_thread():
            self._saved = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.signum is not None:
            self.proc.terminate()
            return
        self.signum = signum
        from kafka_eos.connectors.source.stop_marker import StopMarker
        try:
            for home in self.homes:
                StopMarker.of_checkpoint(home).place()
        except Exception:  # noqa: BLE001 - no marker can be placed: spark-submit gets the signal
            self.proc.send_signal(signum)

    def code(self, exited: int) -> int:
        return exited if self.signum is None else 128 + self.signum
