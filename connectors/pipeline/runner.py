"""Run a pipeline's query in this process: start it, print per-batch progress, wait, report.

Invariants:
- ``run_query`` installs the pipeline's secrets into the process-wide log redaction before
  anything is built, and every line it prints (progress, summary, error) is redacted.
- ``once`` runs Spark's ``availableNow`` trigger (where pyspark cannot, a drain to the same end:
  ``drain``): every record available at start is processed (in ``max_offsets_per_trigger``
  batches), then the query stops. Otherwise the query runs on the
  pipeline's trigger until it fails or is stopped: SIGTERM, Ctrl-C or the stop marker stop it
  between batches, after the running batch committed (``stop.StopControl``); a second signal
  stops it at once.
- The query's state store is the checkpoint's, else the file's ``state.backend``, else the
  default (``state_store``); a stateful pipeline asking for another one than its checkpoint
  recorded, or a session setting contradicting the file, is refused before the query is built.
- A stateful pipeline with a watermark records each batch's event times beside its sink log
  (``event_time_hook``, a listener of the progress reporter), for a savepoint's rewind. A start
  of a checkpoint a savepoint was taken of is refused (``SavepointTaken``, exit 5); a checkpoint
  started from one runs its replay batch first (``restore``).
- Once Spark accepted the plan, the pipeline's shape is recorded beside the checkpoint
  (``pipeline_shape.record_shape``), for ``kafka-eos validate --against-checkpoint``; a record
  that cannot be written is a warning line, never a failed run.
- Once the query ended with an error or was stopped, one final sweep of the sink's open
  transactions (``query_start.release_sink``): its decided batch is committed (or left for the
  next start if the brokers refuse), every other Ongoing transaction under its prefix aborted, so
  that every output partition's last stable offset reaches its high watermark (measured: within
  ``RELEASE_BOUND_S`` of the stop with the brokers up).
- A failed query raises ``PipelineFailed`` with the query's error, shortened to the lines that
  say what failed (the Python exception of the task or of the sink), secrets redacted, and its
  exit code (``exit_codes``: read from the error's class names, so a state a person must decide
  is permanent and anything else transient). Nothing of a failed batch is committed: the next
  run resumes from the checkpoint.
- A run that stopped says how in ``RunResult.exit_code`` (``StopControl.exit_code``: 0 by the
  stop marker or a stop request, 128 + N by signal N); a standing stop request refuses the start
  (``StopRequested``, raised before the query is built).
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, cast

from kafka_eos import KafkaEosError
from kafka_eos.config.model import OnDecodeError, PipelineConfig
from kafka_eos.config.records import records_home
from kafka_eos.config.redact import Redactor, install
from kafka_eos.connectors import exit_codes
from kafka_eos.connectors.pipeline import builder, checkpoint_files, drain, restore
from kafka_eos.connectors.pipeline.checkpoint_compat import CheckpointShapeError, check_checkpoint
from kafka_eos.connectors.pipeline.event_time_hook import recorder_for
from kafka_eos.connectors.pipeline.pipeline_shape import record_shape
from kafka_eos.connectors.pipeline.progress import BatchReport, ProgressReporter
from kafka_eos.connectors.pipeline.records_check import check_records_found
from kafka_eos.connectors.pipeline.state_store import applied, for_start
from kafka_eos.connectors.pipeline.stop import StopControl
from kafka_eos.secrets import spark_redaction_conf

# Python workers (spark.executorEnv reaches the task workers and the driver-side data source
# runners) give freed memory back: glibc otherwise keeps a reused worker's largest batch (its
# mmap threshold rises to 32 MB and it trims the heap only above twice that). Measured at 1 KB
# records: the task side's PSS 911-963 -> 616-666 MB (4 A/B pairs), no CPU cost seen.
WORKER_MEMORY_CONF = {"spark.executorEnv.MALLOC_TRIM_THRESHOLD_": "1048576",
                      "spark.executorEnv.MALLOC_MMAP_THRESHOLD_": "1048576"}
# Spark hides the settings and data source options named by kafka_eos.secrets in plans, the UI
# and event logs; the runner prints its own line per batch instead of Spark's progress bar.
RUN_CONF = {**spark_redaction_conf(), "spark.ui.showConsoleProgress": "false", **WORKER_MEMORY_CONF}
# What a Spark Connect client may set (SQL settings); the server's own settings are its operator's.
REMOTE_CONF = {k: v for k, v in RUN_CONF.items() if k.startswith("spark.sql.")}
POLL_S = 1.0
RELEASE_BOUND_S = 10.0  # stop -> every output partition's LSO == high watermark (brokers up)
STOPPING_POLL_S = 0.1  # while a stop waits for the query to be idle between batches
_PYTHON_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$")


class PipelineFailed(KafkaEosError, RuntimeError):
    """The query stopped with an error; the message is redacted and names what failed, and
    ``exit_code`` is the run's (``exit_codes``)."""

    def __init__(self, message: str, exit_code: int = exit_codes.FAILED.code) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class RunResult:
    name: str
    batches: int = 0
    input_rows: int = 0
    seconds: float = 0.0
    lines: list[str] = field(default_factory=list)
    stopped: str | None = None  # the stop line when a stop request ended the run
    exit_code: int = 0  # the run's (a stop by signal N: 128 + N)

    def summary(self) -> str:
        if self.stopped:
            return self.stopped
        return (f"kafka-eos {self.name}: stopped after {self.batches} batches, {self.input_rows} records read, "
                f"{self.seconds:.1f} s")


def error_summary(text: str, max_lines: int = 6) -> str:
    """The meaningful lines of a (long, JVM + Python) query error: the Python exceptions raised,
    innermost last, without stack frames; the first line when there is none."""
    found: list[str] = []
    for line in text.splitlines():
        match = _PYTHON_ERROR.match(line)
        if match and match.group(1) not in ("StreamingQueryException", "PythonException", "SparkException"):
            entry = f"{match.group(1)}: {match.group(2).strip()}"
            if entry not in found:
                found.append(entry)
    if not found:
        found = [text.strip().splitlines()[0] if text.strip() else "unknown error"]
    return "\n".join(found[-max_lines:])


def is_connect(spark) -> bool:
    """A Spark Connect client session (``SparkSession.builder.remote``): no SparkContext here."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _skipped_counter(spark, cfg: PipelineConfig):
    if cfg.errors.on_decode_error is not OnDecodeError.SKIP or is_connect(spark):
        return None, None  # over Spark Connect there are no accumulators: skipped records are not counted
    accumulator = spark.sparkContext.accumulator(0)
    return accumulator.add, (lambda: accumulator.value)


def run_query(spark, cfg: PipelineConfig, once: bool = False, emit: Callable[[str], None] = print,
              poll_s: float = POLL_S, listeners: list[Callable[[BatchReport], None]] | None = None,
              on_stop_control: Callable[[StopControl], None] | None = None) -> RunResult:
    """Build, start and wait for the pipeline's query in ``spark``; raise ``PipelineFailed``.
    ``on_stop_control`` is handed the run's ``StopControl`` (a group relays its signals to it)."""
    redactor: Redactor = install(cfg.secrets())
    checkpoint_files.use_session(spark)  # a checkpoint at a URI is read through the session's Hadoop
    started, started_ms = time.monotonic(), int(time.time() * 1000)
    on_skipped, skipped = _skipped_counter(spark, cfg)
    # before the query starts: a marker left from an earlier run would stop the source planning
    # cast: a pipeline runs validated, and the checkpoint rule refuses a missing location
    restore.refuse_saved(cfg, redactor)  # a savepoint was taken of the checkpoint: exit 5
    stop = StopControl(cast(str, cfg.checkpoint.location), lambda line: emit(redactor(line)), records_home(cfg)).install()
    if on_stop_control is not None:
        on_stop_control(stop)
    try:
        listeners = [*(listeners or []), *recorder_for(cfg, lambda line: emit(redactor(line)))]  # event times
        reporter = ProgressReporter(cfg, redactor, emit, skipped, listeners, since_ms=started_ms)
        try:
            check_checkpoint(cfg)
            check_records_found(cfg)  # records: kafka: the store holds this checkpoint's sink log
            with applied(spark, for_start(spark, cfg)):  # the state store (state_store), for this query only
                restore.replay_if_due(spark, cfg, reporter.report, redactor)  # started from a savepoint
                query = builder.start(spark, cfg, once, on_skipped)
        except (builder.PipelineBuildError, CheckpointShapeError) as exc:
            raise PipelineFailed(redactor(f"{cfg.origin}: {exc}"), exit_codes.of_error(exc)) from None
        _record_shape(cfg, lambda line: emit(redactor(line)))
        _wait(query, reporter, stop, poll_s, drain.drains() and drain.asked(cfg, once))
    finally:
        stop.uninstall()
    if not query.isActive and (stop.stopped or query.exception() is not None):
        _release(cfg, once)
    reporter.report(query)
    result = RunResult(cfg.name or "kafka-eos", len(reporter.lines), reporter.input_rows,
                       time.monotonic() - started, reporter.lines)
    if stop.stopped:
        result.stopped = redactor(stop.summary(result.name))
    result.exit_code = stop.exit_code
    error = query.exception()
    if error is not None:
        raise PipelineFailed(redactor(f"pipeline {cfg.name} ({cfg.origin}) failed: "
                                      f"{error_summary(str(error))}\nNothing of the failed batch was committed; "
                                      "a new run resumes from the checkpoint."), exit_codes.of_text(str(error)))
    return result


def _release(cfg: PipelineConfig, once: bool) -> None:
    """The exit path's final sweep of the sink's open transactions (never raises)."""
    from kafka_eos.connectors.sink.query_start import release_sink
    release_sink(builder.writer_options(cfg, once))


def _record_shape(cfg: PipelineConfig, emit: Callable[[str], None]) -> None:
    """Record the shape of the pipeline Spark accepted beside its checkpoint (``pipeline_shape``);
    the run does not depend on it, so a failure is a warning line."""
    try:
        record_shape(cfg)
    except (OSError, KafkaEosError) as exc:
        emit(f"kafka-eos {cfg.name}: warning: the pipeline's shape was not recorded beside its checkpoint "
             f"(validate --against-checkpoint compares with an older record): {exc}")


def _wait(query, reporter: ProgressReporter, stop: StopControl, poll_s: float, draining: bool = False) -> None:
    """Until the query ends: report its batches, stop it when a stop is due or, ``draining``, when
    it has read all it had to (``drain``)."""
    from pyspark.errors import StreamingQueryException
    try:
        while not query.awaitTermination(STOPPING_POLL_S if stop.signals or draining else poll_s):
            reporter.report(query)
            if stop.poll(query):
                return
            if draining and drain.drained(query):
                query.stop()
                return
    except StreamingQueryException:
        pass  # reported by the caller from query.exception()
    except KeyboardInterrupt:  # not in the main thread: no handler of ours caught it
        query.stop()


def run_local(cfg: PipelineConfig, once: bool = False, master: str = "local[*]",
              conf: dict[str, str] | None = None, emit: Callable[[str], None] = print,
              verbose: bool = False, metrics_port: int | None = None, metrics_host: str | None = None) -> RunResult:
    """Run in a new local SparkSession of this process (what ``kafka-eos run`` does without --master;
    its driver JVM maps or writes the class archive: ``driver_archive``);
    the driver's console is quiet unless ``verbose`` (``console``); with ``metrics_port`` or the
    file's ``metrics:``, a Prometheus endpoint serves the batches' numbers (``metrics.endpoint``)."""
    with local_spark(f"kafka-eos {cfg.name}", master, conf, verbose) as spark:
        return _serve_and_run(spark, cfg, once, emit, metrics_port, metrics_host)


@contextmanager
def local_spark(app: str, master: str = "local[*]", conf: dict[str, str] | None = None,
                verbose: bool = False) -> Iterator:
    """A new local SparkSession of this process with the run's settings (``RUN_CONF`` under ``conf``),
    its task workers started early; stopped at the end. Its driver JVM maps or writes the class
    archive (``driver_archive``); the console is quiet unless ``verbose`` (``console``)."""
    from kafka_eos.connectors.pipeline.compiled_pyspark import set_spark_home
    from kafka_eos.connectors.pipeline.console import console_conf, quiet_environment
    from kafka_eos.connectors.pipeline.driver_archive import for_local_driver
    from kafka_eos.connectors.spark_harness import local_session
    from kafka_eos.connectors.worker_daemon import start_early
    quiet_environment(master, verbose)
    set_spark_home()
    user = conf or {}
    with for_local_driver():
        spark = local_session(master, app=app, conf={**RUN_CONF, **user, **console_conf(verbose, user)})
        start_early(spark)
        try:
            yield spark
        finally:
            spark.stop()


def run_remote(cfg: PipelineConfig, url: str, once: bool = False, conf: dict[str, str] | None = None,
               emit: Callable[[str], None] = print, metrics_port: int | None = None,
               metrics_host: str | None = None) -> RunResult:
    """Run through a Spark Connect server (``kafka-eos run --remote sc://host:port``): this process
    is the client; the query's driver is the server, whose Python must have kafka-eos installed.
    Only SQL settings can be set from a client (``REMOTE_CONF`` and ``conf``); the checkpoint
    location must be reachable from here and from the server (the stop marker, the shape record)."""
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.remote(url)
    for key, value in {**REMOTE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.create()
    try:
        return _serve_and_run(spark, cfg, once, emit, metrics_port, metrics_host)
    finally:
        spark.stop()  # closes this client's session; the server runs on


def _serve_and_run(spark, cfg: PipelineConfig, once: bool, emit: Callable[[str], None],
                   metrics_port: int | None, metrics_host: str | None = None) -> RunResult:
    from kafka_eos.connectors.operate.metrics import serve
    metrics = serve(cfg, metrics_port, emit, metrics_host)
    try:
        result = run_query(spark, cfg, once, emit, listeners=[metrics] if metrics else None)
        emit(result.summary())
        return result
    finally:
        if metrics is not None:
            metrics.close()
