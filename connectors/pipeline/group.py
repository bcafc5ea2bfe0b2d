"""`kafka-eos run a.yaml b.yaml ...`: a group of pipelines, each its own streaming query in one Spark application.

Invariants:
- Each pipeline runs ``runner.run_query`` in a thread of its own, on a session of its own
  (``SparkSession.newSession``: its own SQL settings, state store and data sources) of the one
  SparkContext, in a FAIR scheduler pool named after it (``spark.scheduler.pool``, inherited by
  its query's thread), so one pipeline's backlog does not hold back the others' tasks.
- Each pipeline plans its batches for its share of the task slots (the slots divided by the
  pipelines, at least 1: ``slot_share``), so a pipeline whose tasks wait (its broker hung) holds
  its share, not every slot: FAIR pools order waiting tasks but cannot take a running one back.
  A stateful pipeline writes from its shuffle partitions' tasks, which this share does not bound.
- Pipelines start one at a time: the next once the last ran its first trigger (or ended, or
  after ``START_WAIT_S``): twenty queries started at once on 2 cores had their driver-side Python
  processes miss Spark's 10 s connect-back (19 of 20 failed to start).
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

SUMMARY_CHARS = 240  # a line of the closing summary
JOIN_S = 0.5  # how often the main thread wakes to serve signals while the group runs
START_WAIT_S = 60.0  # at most this long for a started pipeline's first trigger before the next starts
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
        self.control: StopControl | None = None  # the running query's
        self.leaving: str | None = None  # why the group stops this pipeline alone (``stop``)

    def _controlled(self, control: StopControl) -> None:
        self.control = control
        self.relay.register(control)
        if self.leaving:
            control.ask(self.leaving)

    def stop(self, reason: str) -> None:
        """Stop this pipeline alone after its running batch; it is not restarted."""
        self.leaving = reason
        if self.control is not None:
            self.control.ask(reason)

    def serve(self, spark, run: Callable[..., object]) -> None:
        """Run the query until it ends for good (see the module's invariants); keep the outcome."""
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.name)
        _activate(spark)
        while True:
            began = time.monotonic()
            try:
                result = run(spark, self.cfg, emit=self.emit, on_stop_control=self._controlled)
                self.outcome = Outcome(result.exit_code, result.summary())  # type: ignore[attr-defined]
                self.emit(self.outcome.line)
                return
            except Exception as exc:  # noqa: BLE001 - this pipeline's end; the others go on
                code, text = of_error(exc), str(exc) if isinstance(exc, KafkaEosError) else error_summary(str(exc))
                said = "not started" if code == 0 else f"failed ({code})"  # 0: a stop request stands
                self.outcome = Outcome(code, self.redactor(f"kafka-eos {self.name}: {said}: {text}"))
                self.emit(self.outcome.line)
            if not self._restart_after(code, time.monotonic() - began):
                return

    def _restart_after(self, code: int, lasted_s: float) -> bool:
        if code == 0 or permanent(code) or self.relay.stopping.is_set() or self.leaving:
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


def _triggered(session, name: str) -> bool:
    """The query ``name`` of ``session`` ran its first trigger (its source planned: a batch, or none
    for want of data, which Spark reports once)."""
    try:
        return any(q.name == name and q.lastProgress is not None for q in session.streams.active)
    except Exception:  # noqa: BLE001 - a session stopping: the thread's own end says what happened
        return False


def slot_share(slots: int | None, pipelines: int) -> int | None:
    """One pipeline's task slots in a group of ``pipelines`` (None: the slots are not known)."""
    return None if slots is None else max(1, slots // max(1, pipelines))


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


class Group:
    """The running pipelines of one application: ``start`` one, ``stop`` one, ``wait`` for all."""

    def __init__(self, spark, run: Callable[..., object], emit: Callable[[str], None], restarts: int) -> None:
        self.spark, self.run, self.emit, self.restarts = spark, run, emit, restarts
        self.relay = StopRelay()
        self.members: list[tuple[Member, threading.Thread]] = []

    def start(self, cfg: PipelineConfig, pipelines: int | None = None) -> Member:
        """Start ``cfg``'s query for its share of the slots among ``pipelines`` (default: those running, and it)."""
        from pyspark import InheritableThread
        from kafka_eos.connectors.datasource import SHARE_SETTING, cluster_cores
        began = time.monotonic()
        session = self.spark.newSession()
        share = slot_share(cluster_cores(self.spark), pipelines or len(self.running()) + 1)
        if share is not None:
            session.conf.set(SHARE_SETTING, str(share))
        redactor = install(cfg.secrets())  # every line of the process is redacted of each member's secrets
        member = Member(cfg, redactor, lambda line: self.emit(redactor(line)), self.restarts, self.relay)
        thread = InheritableThread(target=member.serve, args=(session, self.run),
                                   name=f"kafka-eos {member.name}", daemon=True)
        self.members.append((member, thread))
        thread.start()
        while not _triggered(session, member.name) and thread.is_alive() and time.monotonic() - began < START_WAIT_S:
            time.sleep(JOIN_S)  # one start at a time: each query's driver-side Python processes connect back in 10 s
        return member

    def running(self) -> dict[str, Member]:
        """The members whose thread is alive, by file."""
        return {m.cfg.origin: m for m, thread in self.members if thread.is_alive()}

    def wait(self, member: Member | None = None) -> None:
        """Until ``member`` (else every member) ended; signals are served meanwhile."""
        for other, thread in self.members:
            while (member is None or other is member) and thread.is_alive():
                thread.join(JOIN_S)

    def summary(self) -> int:
        self.emit("kafka-eos: the group ended:")
        for member, _ in self.members:
            line = member.outcome.line.splitlines()[0]  # the whole error is above, where it happened
            self.emit(f"  {line if len(line) <= SUMMARY_CHARS else line[:SUMMARY_CHARS] + '...'} "
                      f"(exit {member.outcome.code})")
        return group_exit_code([m.outcome.code for m, _ in self.members])


def run_group(spark, cfgs: Sequence[PipelineConfig], run: Callable[..., object],
              emit: Callable[[str], None] = print, restarts: int = 0) -> int:
    """Run every pipeline of ``cfgs`` in ``spark``'s application until all ended; the exit code."""
    group = Group(spark, run, emit, restarts)
    group.relay.install()
    emit(f"kafka-eos: a group of {len(cfgs)} pipelines in one application: "
         + ", ".join(f"{cfg.name} ({cfg.origin})" for cfg in cfgs))
    try:
        for cfg in cfgs:
            group.start(cfg, len(cfgs))
        group.wait()
    finally:
        group.relay.uninstall()
    return group.summary()


def held_then_run(spark, cfg: PipelineConfig, **kwargs):
    """``run_query`` after the held-state check a single run makes before its session (``held_states``),
    with the file's own metrics endpoint (``metrics:``) while it runs."""
    from kafka_eos.connectors.operate.metrics import serve
    from kafka_eos.connectors.pipeline.held_states import check_held
    from kafka_eos.connectors.pipeline.runner import run_query
    check_held(cfg)
    metrics = serve(cfg, None, kwargs.get("emit", print))
    try:
        return run_query(spark, cfg, listeners=[metrics] if metrics else None, **kwargs)
    finally:
        if metrics is not None:
            metrics.close()


def run_group_local(cfgs: Sequence[PipelineConfig], master: str = "local[*]", conf: dict[str, str] | None = None,
                    emit: Callable[[str], None] = print, verbose: bool = False, restarts: int = 0,
                    once: bool = False, watch: Callable[[Group], int] | None = None) -> int:
    """The group in a new local SparkSession of this process (``runner.run_local`` for one pipeline);
    ``watch``: the group follows a directory (``group_watch``) instead of ``cfgs``."""
    from kafka_eos.connectors.pipeline.runner import local_spark
    with local_spark(f"kafka-eos group of {len(cfgs)}", master, {**FAIR_CONF, **(conf or {})}, verbose) as spark:
        run = partial(held_then_run, once=once)
        return run_group(spark, cfgs, run, emit, restarts) if watch is None else watch(Group(spark, run, emit, restarts))
