"""``kafka-eos verify --follow pipeline.yaml``: every committed batch judged within seconds of its commit.

    kafka-eos verify --follow orders.yaml [--recompute [--recompute-every 100]]

Each round (every ``interval_s``):
  1. the sink log's committed batches after ``verified_through`` are pending; batches the log
     dropped before they were judged are counted as aged out (``follow_state``: must stay 0);
  2. each output partition they wrote is read on from where the last round stopped (a new one
     from a little before the oldest pending batch's commit, as ``verify`` begins) up to its
     high watermark: only what is new is read;
  3. ``txn.follow_audit`` judges the batches whose output is complete, in order;
  4. with ``recompute``, every ``every``-th batch that passed is also re-run over its recorded
     input and its records compared (``txn.recompute_audit``), as ``verify --recompute`` does,
     in a worker of its own (``rerun_worker``): the rounds never wait for Spark;
  5. the round is recorded beside the sink log as a verify run (``status``, the probes' counters)
     and the follower's state (``follow_state``: verified through, aged out, totals).
Invariants: reads the sink log and the output only (Fetch, ListOffsets, DescribeConfigs) and
writes only its records beside the sink log; it needs no Spark unless it recomputes. A restarted
follower goes on from its recorded ``verified_through``.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from kafka_eos.connectors.operate.rerun_worker import Rerun, RerunWorker
from kafka_eos.connectors.operate.verify import START_MARGIN_MS
from kafka_eos.txn.cluster.control_plane import control_plane
from kafka_eos.txn.audit.follow_audit import GRACE_MS, Pending, judge_round, unanchor
from kafka_eos.txn.log.follow_state import DELAY_BOUND_S, FollowState, latest_state, write_state  # noqa: F401
from kafka_eos.txn.audit.output_audit import PASSED, BatchVerdict, PartitionScan, committed_handles
from kafka_eos.txn.audit.output_scan import LATEST, bounds, compacted_topics, read_into, scan_start_ms
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_log import SinkLogReader
from kafka_eos.txn.protocol.states import BatchState, PartitionState
from kafka_eos.txn.log.verify_runs import record_run

DEFAULT_INTERVAL_S = 1.0
DEFAULT_RECOMPUTE_EVERY = 100
SHOWN_OUTSIDE = 5           # lines of records outside the batches followed, per round
MAX_BATCHES_PER_ROUND = 500  # a follower catching up judges the backlog in rounds of this many


class Follower:
    """One pipeline's continuous verification; ``round()`` runs steps 1-5 once."""

    def __init__(self, config: SinkConfig, progress: Callable[[str], None] = lambda line: None,
                 recompute: Callable[[list[int]], Any] | None = None, every: int = DEFAULT_RECOMPUTE_EVERY,
                 clock: Callable[[], float] = time.time, grace_ms: int = GRACE_MS) -> None:
        self.config, self.progress, self.clock, self.grace_ms = config, progress, clock, grace_ms
        self.every = max(1, every)
        self._lock = threading.Lock()   # the rounds and the re-run worker both record
        self.log = config.log_location
        self.reader = control_plane(config.client_conf())
        self.state = latest_state(self.log) or FollowState()
        self.scans: dict[tuple[str, int], PartitionScan] = {}
        self.next_offset: dict[tuple[str, int], int] = {}
        self._compacted: set[str] | None = None
        self.committed_at: dict[int, int | None] = {}   # the last round's pending batches -> commit time
        self.reruns = None if recompute is None else RerunWorker(recompute, self._record_rerun, progress)

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def pending(self) -> tuple[list[Pending], int]:
        """Step 1: the pending batches, and how many batches aged out since the last round."""
        log = SinkLogReader(self.log)
        ids = [b for b in log.batch_ids() if b > self.state.verified_through]
        aged = ids[0] - self.state.verified_through - 1 if ids and self.state.verified_through >= 0 else 0
        out = []
        for batch_id in ids[:MAX_BATCHES_PER_ROUND]:
            record = log.get(batch_id)
            if record is None or record.state is not BatchState.COMMITTED:
                break
            handles = tuple(committed_handles(record.handles_with(PartitionState.COMMITTED)))
            at = record.metrics.get("committed_at_ms")
            out.append(Pending(batch_id, handles, None if at is None else int(at)))
        return out, max(0, aged)

    def read(self, pending: list[Pending]) -> None:
        """Step 2."""
        wanted = {(t, int(p)) for b in pending for h in b.handles for t, ps in h.partitions.items() for p in ps}
        new = sorted(wanted - set(self.scans))
        if new:
            start_ms = scan_start_ms([b.committed_at_ms for b in pending], (h for b in pending for h in b.handles),
                                     self.config.transaction_timeout_ms, START_MARGIN_MS)
            compacted = self._compacted_topics({t for t, _ in new})
            for (topic, p), where in bounds(self.reader, new, start_ms).items():
                self.scans[(topic, p)] = PartitionScan(topic, p, where.start, where.log_start, topic in compacted,
                                                       keep_all=True)
                self.next_offset[(topic, p)] = max(where.start, where.log_start)
        if not self.scans:
            return
        from kafka import TopicPartition
        ends = self.reader.list_partition_offsets({TopicPartition(t, p): LATEST for t, p in self.scans})
        for tp, found in ends.items():
            key = (tp.topic, tp.partition)
            self.next_offset[key] = read_into(self.reader, self.scans[key], self.next_offset[key], found.offset,
                                              set(), self.progress)

    def _compacted_topics(self, topics: set[str]) -> set[str]:
        if self._compacted is None:
            self._compacted = set()
        self._compacted |= compacted_topics(self.config.client_conf(), sorted(topics), self.progress)
        return self._compacted

    def round(self) -> list[BatchVerdict]:
        """Steps 1-5; returns the verdicts of the batches judged in this round."""
        pending, aged = self.pending()
        self.committed_at = {b.batch_id: b.committed_at_ms for b in pending}
        if aged:
            self.progress(f"{aged} committed batch(es) after batch {self.state.verified_through} left the sink log "
                          "before they were verified (aged out): keep the follower running, or raise "
                          "sink.evidence_retention_ms")
            unanchor(self.scans)
        self.read(pending)
        outside: list[str] = []
        verdicts = judge_round(pending, self.scans, self._now_ms(), self.grace_ms, outside)
        for line in outside[:SHOWN_OUTSIDE]:
            self.progress(f"outside the batches followed: {line}")
        if len(outside) > SHOWN_OUTSIDE:
            self.progress(f"outside the batches followed: {len(outside) - SHOWN_OUTSIDE} more record runs like these")
        self._recompute(verdicts, {b.batch_id: b for b in pending})
        through = verdicts[-1].batch_id if verdicts else (
            self.state.verified_through + aged if aged else self.state.verified_through)
        if verdicts or aged:
            self._record(verdicts, through, aged)
        return verdicts

    def _recompute(self, verdicts: list[BatchVerdict], pending: dict[int, Pending]) -> None:
        """Step 4, for the sampled batches that passed: handed to the re-run worker."""
        if self.reruns is None:
            return
        for verdict in [v for v in verdicts if v.outcome == PASSED and v.batch_id % self.every == 0]:
            handles = list(pending[verdict.batch_id].handles)
            again = BatchVerdict(verdict.batch_id, PASSED, verdict.records, ranges=verdict.ranges)
            self.reruns.submit(Rerun(again, handles, self._sets_of(verdict, handles)))

    def _sets_of(self, verdict: BatchVerdict, handles: list) -> dict[tuple[str, int], PartitionScan]:
        """The batch's committed records as record sets: its ranges read again (they were just read)."""
        expected = {(h.producer_id, h.producer_epoch) for h in handles}
        scans = {}
        for topic, partitions in verdict.ranges.items():
            for p, ranges in partitions.items():
                first = min(r[0] for r in ranges)
                scan = PartitionScan(topic, int(p), first, 0, sets=True)
                read_into(self.reader, scan, first, self.next_offset[(topic, int(p))], expected)
                scans[(topic, int(p))] = scan
        return scans

    def _record(self, verdicts: list[BatchVerdict], through: int, aged: int) -> None:
        """Step 5."""
        outcomes: dict[str, list[int]] = {}
        for v in verdicts:
            outcomes.setdefault(v.outcome, []).append(v.batch_id)
        now = self._now_ms()
        with self._lock:
            if verdicts:
                first = next((v for v in verdicts if v.outcome != PASSED), None)
                verified = outcomes.get(PASSED, [])
                record_run(self.log, outcomes, max(verified) if verified else None,
                           None if first is None else {"batch": first.batch_id, **(first.first_problem or {})}, now)
            self.state = self.state.counted(outcomes, through, aged, now)
            write_state(self.log, self.state)

    def _record_rerun(self, verdict: BatchVerdict) -> None:
        """A re-run's verdict: recorded as a verify run; one that did not pass also counts in the
        follower's totals (the batch was counted verified by its read-side check)."""
        now = self._now_ms()
        with self._lock:
            passed = verdict.outcome == PASSED
            record_run(self.log, {verdict.outcome: [verdict.batch_id]}, verdict.batch_id if passed else None,
                       None if passed else {"batch": verdict.batch_id, **(verdict.first_problem or {})}, now)
            if not passed:
                self.state = self.state.counted({verdict.outcome: [verdict.batch_id]}, self.state.verified_through,
                                                0, now)
                write_state(self.log, self.state)

    def heartbeat(self) -> None:
        """Record the state again (a follower with nothing to judge still shows it is alive)."""
        with self._lock:
            self.state = self.state.counted({}, self.state.verified_through, 0, self._now_ms())
            write_state(self.log, self.state)

    def close(self) -> None:
        if self.reruns is not None:
            self.reruns.close()


HEARTBEAT_S = 10.0


def describe(name: str, verdicts: list[BatchVerdict], pending: int, now_ms: int,
             committed_at: dict[int, int | None]) -> list[str]:
    """The lines of one round: a summary of the batches judged, then each problem."""
    if not verdicts:
        return []
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    delays = [now_ms - at for v in verdicts if (at := committed_at.get(v.batch_id)) is not None]
    first, last = verdicts[0].batch_id, verdicts[-1].batch_id
    lines = [f"kafka-eos verify {name}: " + (f"batches {first}-{last}: " if last > first else f"batch {first}: ")
             + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
             + f" ({sum(v.records for v in verdicts):,} records"
             + (f", {min(delays) / 1000:.1f}-{max(delays) / 1000:.1f} s after their commit" if delays else "")
             + (f"; {pending} more pending" if pending else "") + ")"]
    for v in verdicts:
        lines += [f"kafka-eos verify {name}: batch {v.batch_id}: {v.outcome}: {p}" for p in v.problems]
    return lines


def follow(follower: Follower, name: str, stop: Any, emit: Callable[[str], None],
           interval_s: float = DEFAULT_INTERVAL_S) -> None:
    """Rounds every ``interval_s`` until ``stop`` (a ``threading.Event``) is set; a round that
    fails (a broker down) is reported and the next one tries again from the same place."""
    beat = time.monotonic()
    while not stop.is_set():
        began = time.monotonic()
        try:
            verdicts = follower.round()
            at = follower.committed_at
            for line in describe(name, verdicts, len(at) - len(verdicts), follower._now_ms(), at):
                emit(line)
            if verdicts:
                beat = time.monotonic()
            elif time.monotonic() - beat >= HEARTBEAT_S:
                follower.heartbeat()
                beat = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - reported; the next round retries
            emit(f"kafka-eos verify {name}: this round failed ({str(exc).splitlines()[0] if str(exc) else exc!r}); "
                 f"retrying in {interval_s:g} s")
        stop.wait(max(0.0, interval_s - (time.monotonic() - began)))
