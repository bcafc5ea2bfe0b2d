"""``kafka-eos savepoint pipeline.yaml [--to LOCATION]``: stop the pipeline at a batch boundary, save
what a new checkpoint needs to go on from there, retire the old checkpoint for starts.

    1. refuse a pipeline whose state a savepoint cannot carry (nothing written, nothing stopped)
    2. stop request + stop marker (``stop.request_stop``, what ``kafka-eos stop`` places): a running
       run stops after its running batch commits and removes the marker; wait for that
    3. read the savepoint (``savepoint_plan.gather``: refused while a batch is planned, uncommitted)
    4. mark the old sink log saved (``_savepoint/taken.json``), then write the record at LOCATION

Invariants:
- Nothing decided and uncommitted is saved: step 3 reads the last committed batch only after the
  run stopped (the marker gone) or none runs (the marker stayed ``QUIET_S`` with every planned
  batch committed: a run polls it every second and removes it once idle). The marker is then
  left in place: a driver that was only frozen plans no new data when it wakes, and stops (a
  start removes a marker without a run: ``stop.StopControl``; every start is refused anyway).
- The mark comes before the record: once it exists, every start of the old checkpoint is refused
  (``SavepointTaken``, exit 5: a start of a saved checkpoint is a deployment that still runs the old
  file; a person must move it to the new one, and every restart would be refused the same way).
  `resume` does not lift it. A savepoint interrupted between the two is completed by running the
  command again (the mark names the location; another ``--to`` is refused, naming it).
- Taking it again on a saved checkpoint writes the same record (create-only: kept when equal).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from kafka_eos import KafkaEosError
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.records import records_home
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.progress import sink_log_location
from kafka_eos.connectors.pipeline.savepoint_plan import check_restorable, gather, window_of
from kafka_eos.connectors.pipeline.stop import is_idle, request_stop
from kafka_eos.connectors.source.stop_marker import StopMarker
from kafka_eos.txn.log.kafka_store import store_topic
from kafka_eos.txn.log.savepoints import (Savepoint, SavepointConflict, SavepointTaken, check_not_taken,
                                          default_location, mark_taken, read_savepoint, taken, write_savepoint)
from kafka_eos.txn.log.stores import parse_kafka, register

__all__ = ["RunDidNotStop", "SavepointTaken", "Taken", "check_no_savepoint", "describe", "register_savepoint", "take"]

QUIET_S = 5.0
POLL_S = 0.5


class RunDidNotStop(KafkaEosError, RuntimeError):
    """The running run did not stop within the wait; the stop request stands."""


@dataclass(frozen=True)
class Taken:
    location: str
    savepoint: Savepoint
    written: bool
    seconds: float


def check_no_savepoint(cfg: PipelineConfig) -> None:
    """Raise ``SavepointTaken`` when a savepoint was taken of ``cfg``'s checkpoint (reads only)."""
    check_not_taken(sink_log_location(cfg), str(cfg.checkpoint.location))


def register_savepoint(cfg: PipelineConfig, location: str) -> None:
    """A savepoint kept in a Kafka record store (``kafka:<store topic>/...``: the saved pipeline's,
    under ``checkpoint.records: kafka``) is read, by the pipeline restored from it, through that
    pipeline's output cluster (where the saved pipeline kept it: a restore keeps the output cluster);
    nothing for a savepoint in files."""
    found = parse_kafka(location)
    if found is not None:
        register(location, cfg.sink.kafka.client_conf(), found.topic.removeprefix(store_topic("")))


def _running_stopped(checkpoint: str, home: str, wait_s: float) -> bool:
    """After the stop request (in ``home``): True when a run removed the marker (it stopped), False when none runs."""
    marker, reader = StopMarker.of_checkpoint(home), CheckpointReader(checkpoint)
    started = time.monotonic()
    idle_since: float | None = None  # since when every planned batch is committed, the newest the same
    newest: int | None = None
    while marker.present():
        now = time.monotonic()
        waited = now - started
        planned = reader.offset_batches()
        last = planned[-1] if planned else None
        if not is_idle({"isTriggerActive": False}, reader) or last != newest:
            idle_since, newest = None, last
        elif idle_since is None:
            idle_since = now
        # idle QUIET_S on end: a run between batches (which may still plan the no-data batch its
        # watermark needs) has seen the marker and removed it by then
        if idle_since is not None and now - idle_since >= QUIET_S:
            return False  # the marker stays: a run that was only frozen plans nothing when it wakes
        if waited >= wait_s:
            raise RunDidNotStop(f"{checkpoint}: the run did not stop within {wait_s:.0f} s (batch {newest} is planned "
                                "and not committed); nothing was saved. The stop request stands: a running run stops "
                                "after that batch, then run `kafka-eos savepoint` again. If no run is running any more "
                                "(its driver died), `kafka-eos resume` and `kafka-eos run --once` commit the batch, then "
                                "take the savepoint")
        time.sleep(POLL_S)
    return True


def take(cfg: PipelineConfig, to: str | None, pyspark_version: str, emit: Callable[[str], None],
         wait_s: float = 600.0) -> Taken:
    """Steps 1-4 of the module; the savepoint's location and record."""
    began = time.monotonic()
    checkpoint, log = str(cfg.checkpoint.location), sink_log_location(cfg)
    mark = taken(log)
    if mark is not None and to and to != mark.location:
        raise SavepointConflict(f"a savepoint of {checkpoint} was taken at {mark.location}; this checkpoint has one "
                                f"savepoint: use that location (or copy its savepoint.json to {to})")
    if mark is not None:
        return _complete(cfg, mark.location, pyspark_version, began)
    check_restorable(window_of(cfg))                                      # 1
    request_stop(records_home(cfg))                                          # 2
    emit(f"kafka-eos savepoint {cfg.name}: stop requested; waiting for the running batch to commit")
    stopped = _running_stopped(checkpoint, records_home(cfg), wait_s)
    emit(f"kafka-eos savepoint {cfg.name}: " + ("the run stopped" if stopped else "no run was running"))
    sp = gather(cfg, pyspark_version)                                     # 3
    location = to or default_location(log)
    mark_taken(log, location, sp.last_batch)                              # 4
    written = write_savepoint(location, sp)
    return Taken(location, sp, written, time.monotonic() - began)


def _complete(cfg: PipelineConfig, location: str, pyspark_version: str, began: float) -> Taken:
    """A saved checkpoint: its record, written now if an interrupted savepoint left none."""
    try:
        return Taken(location, read_savepoint(location), False, time.monotonic() - began)
    except KafkaEosError:
        sp = gather(cfg, pyspark_version)
        written = write_savepoint(location, sp)
        return Taken(location, sp, written, time.monotonic() - began)


def describe(done: Taken) -> list[str]:
    sp = done.savepoint
    w0 = sp.rewind.get("w0_ms") if sp.rewind else None
    lines = [f"savepoint {'written' if done.written else 'kept (already there)'}: {done.location}",
             f"after batch {sp.last_batch}, watermark {sp.watermark_ms} ms"
             + (f", earliest open window from {w0} ms, replay from batch {sp.rewind['batch']}" if sp.rewind else ""),
             f"the checkpoint {sp.checkpoint} writes nothing more; go on with `kafka-eos run <new.yaml> "
             f"--from-savepoint {done.location}` (a new checkpoint.location)",
             f"took {done.seconds:.1f} s"]
    return lines
