"""`kafka-eos run a.yaml b.yaml ...`: a group of pipelines, each its own streaming query in one Spark application.

Invariants:
- Each pipeline runs ``runner.run_query`` in a thread of its own, on a session of its own
  (``SparkSession.newSession``: its own SQL settings, state store and data sources) of the one
  SparkContext, in a FAIR scheduler pool named after it (``spark.scheduler.pool``, inherited by
  its query's thread), so one pipeline's backlog does not hold back the others' tasks.
- A pipeline's failure ends its own query only (``Member.serve``): with ``restarts``, a transient
  failure starts its query again in this application after the supervisor's pause (1 s doubling
  to 60 s, the count reset after ``STEADY_S``), a permanent one never; the others go on.
- SIGTERM or SIGINT stops every pipeline as it stops one (after its running batch; again: at
  once), relayed to each run's ``StopControl``; nothing is restarted after it. ``kafka-eos stop
  b.yaml`` stops b alone (its marker), the others go on.
- The group ends when every pipeline ended; the summary has one line per pipeline, and the exit
  code is ``group_exit_code``'s.
"""
from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Sequence

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.redact import Redactor, install
from kafka_eos.connectors.exit_codes import FAILED, of_error, permanent
from kafka_eos.connectors.pipeline.runner import error_summary
from kafka_eos.connectors.pipeline.stop import StopControl
from kafka_eos.connectors.pipeline.supervisor import STEADY_S, pause_s

JOIN_S = 0.5  # how often the main thread wakes to serve signals while the group runs
FAIR_CONF = {"spark.scheduler.mode": "FAIR"}


@dataclass
class Outcome:
    code: int
    line: str


@dataclass
class StopRelay:
    """The group's signal handler: every run's ``StopControl`` gets the signal."""
    controls: list[StopControl] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    _saved: dict = field(default_factory=dict)

    def register(self, control: StopControl) -> None:
        self.controls.append(control)

    def on_signal(self, signum: int, frame=None) -> None:
        self.stopping.set()
        for control in list(self.controls):
            control._on_signal(signum, frame)

    def install(self) -> "StopRelay":
        if threading.current_thread() is threading.main_thread():
            self._saved = {s: signal.signal(s, self.on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        return self

    def uninstall(self) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)


class Member:
    """One pipeline of the group: its thread runs its query, restarting it per ``restarts``."""

    def __init__(self, cfg: PipelineConfig, redactor: Redactor, emit: Callable[[str], None], restarts: int,
                 relay: StopRelay, pause: Callable[[int], float] = pause_s) -> None:
        self.cfg, self.redactor, self.emit, self.restarts = cfg, redactor, emit, restarts
        self.relay, self.pause = relay, pause
        self.name = cfg.name or "kafka-eos"
        self.outcome = Outcome(FAILED.code, f"kafka-eos {self.name}: did not start")
        self.failures = 0

    def serve(self, spark, run: Callable[..., object]) -> None:
        """Run the query until it ends for good (see the module's invariants); keep the outcome."""
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.name)
        _activate(spark)
        while True:
            began = time.monotonic()
            try:
                result = run(spark, self.cfg, emit=self.emit, on_stop_control=self.relay.register)
                self.outcome = Outcome(result.exit_code, result.summary())  # type: ignore[attr-defined]
                return
            except Exception as exc:  # noqa: BLE001 - this pipeline's end; the others go on
                code, text = of_error(exc), str(exc) if isinstance(exc, KafkaEosError) else error_summary(str(exc))
                said = "not started" if code == 0 else f"failed ({code})"  # 0: a stop request stands
                self.outcome = Outcome(code, self.redactor(f"kafka-eos {self.name}: {said}: {text}"))
                self.emit(self.outcome.line)
            if not self._restart_after(code, time.monotonic() - began):
                return

    def _restart_after(self, code: int, lasted_s: float) -> bool:
        if code == 0 or permanent(code) or self.relay.stopping.is_set():
            return False
        self.failures = 1 if lasted_s >= STEADY_S else self.failures + 1
        if self.failures > self.restarts:
            if self.restarts:
                self.emit(f"kafka-eos {self.name}: no restart left ({self.restarts} in a row)")
            return False
        pause = self.pause(self.failures)
        self.emit(f"kafka-eos {self.name}: restart {self.failures} of {self.restarts} in {pause:.0f} s, "
                  "in this application; the other pipelines go on")
        return not self.relay.stopping.wait(pause)


def _activate(spark) -> None:
    """Make ``spark`` this thread's active session in the JVM: Spark looks a Python data source up
    in the active session's registry (a thread of the group has none of its own)."""
    if hasattr(spark, "_jsparkSession"):
        spark.sparkContext._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def group_exit_code(codes: Sequence[int]) -> int:
    """The first permanent code, else the first transient failure, else the first signal's, else 0."""
    failed = [c for c in codes if c]
    for wanted in (permanent, lambda c: c < 128):
        for code in failed:
            if wanted(code):
                return code
    return failed[0] if failed else 0


def run_group(spark, cfgs: Sequence[PipelineConfig], run: Callable[..., object],
              emit: Callable[[str], None] = print, restarts: int = 0) -> int:
    """Run every pipeline of ``cfgs`` in ``spark``'s application until all ended; the exit code."""
    from pyspark import InheritableThread
    redactor = install([s for cfg in cfgs for s in cfg.secrets()])
    relay = StopRelay().install()
    members = [Member(cfg, redactor, lambda line: emit(redactor(line)), restarts, relay) for cfg in cfgs]
    threads = [InheritableThread(target=m.serve, args=(spark.newSession(), run), name=f"kafka-eos {m.name}",
                                 daemon=True) for m in members]
    emit(f"kafka-eos: a group of {len(members)} pipelines in one application: "
         + ", ".join(f"{m.name} ({m.cfg.origin})" for m in members))
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(JOIN_S)
    finally:
        relay.uninstall()
    emit("kafka-eos: the group ended:")
    for member in members:
        emit(f"  {member.outcome.line} (exit {member.outcome.code})")
    return group_exit_code([m.outcome.code for m in members])


def held_then_run(spark, cfg: PipelineConfig, **kwargs):
    """``run_query`` after the held-state check a single run makes before its session (``held_states``)."""
    from kafka_eos.connectors.pipeline.held_states import check_held
    from kafka_eos.connectors.pipeline.runner import run_query
    check_held(cfg)
    return run_query(spark, cfg, **kwargs)


def run_group_local(cfgs: Sequence[PipelineConfig], master: str = "local[*]", conf: dict[str, str] | None = None,
                    emit: Callable[[str], None] = print, verbose: bool = False, restarts: int = 0,
                    once: bool = False) -> int:
    """The group in a new local SparkSession of this process (``runner.run_local`` for one pipeline)."""
    from kafka_eos.connectors.pipeline.compiled_pyspark import set_spark_home
    from kafka_eos.connectors.pipeline.console import console_conf, quiet_environment
    from kafka_eos.connectors.pipeline.driver_archive import for_local_driver
    from kafka_eos.connectors.pipeline.runner import RUN_CONF
    from kafka_eos.connectors.spark_harness import local_session
    from kafka_eos.connectors.worker_daemon import start_early
    quiet_environment(master, verbose)
    set_spark_home()
    user = conf or {}
    with for_local_driver():
        spark = local_session(master, app=f"kafka-eos group of {len(cfgs)}",
                              conf={**RUN_CONF, **FAIR_CONF, **user, **console_conf(verbose, user)})
        start_early(spark)
        try:
            return run_group(spark, cfgs, partial(held_then_run, once=once), emit, restarts)
        finally:
            spark.stop()
