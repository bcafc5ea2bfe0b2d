"""FollowState: where continuous verification (``verify --follow``) stands, recorded beside the
sink log, and how far the committed batches are ahead of it (``follow_lag``).

Invariants enforced here:
- a record is ``_verify-follow/<at_ms>-<random>.json`` {v, at_ms, verified_through, aged_out,
  totals} (``timed_records``: create-only, the newest ``KEEP`` kept, its version read by
  ``log_store.versioned``); ``verified_through`` is the newest batch such that every committed
  batch up to it was judged (-1: none yet); ``aged_out`` counts the committed batches the sink log
  dropped before they were judged, over every run of the follower (it must stay 0);
- ``follow_lag`` reads the sink log and the newest record only: no Kafka, no Spark, so the
  driver's probe and the monitor tell a follower that stopped or fell behind from one that keeps up.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from kafka_eos.txn.log.log_store import child, versioned
from kafka_eos.txn.audit.output_audit import FAILED, UNVERIFIABLE
from kafka_eos.txn.log.kafka_store import StoreRole
from kafka_eos.txn.log.sink_log import SinkLogReader
from kafka_eos.txn.protocol.states import BatchState
from kafka_eos.txn.writer.timed_records import read_timed, write_timed

FOLDER = "_verify-follow"
FORMAT = 1
KEEP = 20
DELAY_BOUND_S = 60.0   # the stated bound: a follower judges a committed batch within this (KafkaEosVerifyBehind)


@dataclass(frozen=True)
class FollowState:
    at_ms: int = 0
    verified_through: int = -1
    aged_out: int = 0
    totals: dict[str, int] = field(default_factory=dict)   # outcome -> batches judged, over every run

    def counted(self, outcomes: dict[str, list[int]], through: int, aged_out: int, at_ms: int) -> "FollowState":
        totals = dict(self.totals)
        for outcome, ids in outcomes.items():
            totals[outcome] = totals.get(outcome, 0) + len(ids)
        return FollowState(at_ms, through, self.aged_out + aged_out, totals)


def _folder(log_location: str) -> str:
    return child(log_location, FOLDER)


def write_state(log_location: str, state: FollowState) -> str:
    """Record ``state``; returns the record's name. Raises what the store raises."""
    name = write_timed(_folder(log_location), state.at_ms, {
        "v": FORMAT, "at_ms": state.at_ms, "verified_through": state.verified_through,
        "aged_out": state.aged_out, "totals": state.totals}, KEEP, StoreRole.FOLLOWER)
    return f"{FOLDER}/{name}"


def latest_state(log_location: str) -> FollowState | None:
    """The newest recorded state, or None when no follower ever recorded one."""
    records = read_timed(_folder(log_location))
    if not records:
        return None
    _, name, text = records[-1]
    data = versioned(text, f"{FOLDER}/{name}", "verify follow record", FORMAT)
    return FollowState(int(data["at_ms"]), int(data["verified_through"]), int(data["aged_out"]),
                       {k: int(v) for k, v in data["totals"].items()})


@dataclass(frozen=True)
class FollowLag:
    """How far continuous verification is behind the sink log's committed batches."""
    unverified: int              # committed batches newer than ``verified_through``
    oldest_unverified_s: float   # age of the oldest of them since its commit (0: none)
    aged_out: int                # recorded, plus batches dropped since the record, not yet judged
    verified_through: int
    at_ms: int                   # when the follower last recorded (its heartbeat)
    failed: int = 0              # batches it judged failed, over every run of it
    unverifiable: int = 0        # and judged "cannot be verified"


def follow_lag(log_location: str, now_ms: int | None = None) -> FollowLag | None:
    """``FollowLag`` from the sink log and the newest follow record; None without a follower."""
    state = latest_state(log_location)
    if state is None:
        return None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    reader = SinkLogReader(log_location)
    newer = [b for b in reader.batch_ids() if b > state.verified_through]
    gap = max(0, newer[0] - state.verified_through - 1) if newer and state.verified_through >= 0 else 0
    unverified, oldest_s = 0, 0.0
    for batch_id in newer:
        record = reader.get(batch_id)
        if record is None or record.state is not BatchState.COMMITTED:
            break
        if unverified == 0:
            committed_at = record.metrics.get("committed_at_ms")
            oldest_s = max(0.0, (now_ms - committed_at) / 1000) if committed_at else 0.0
        unverified += 1
        if unverified > 1:  # the rest only counts: no need to read every record
            unverified = _committed_count(reader, newer)
            break
    return FollowLag(unverified, round(oldest_s, 3), state.aged_out + gap, state.verified_through, state.at_ms,
                     state.totals.get(FAILED, 0), state.totals.get(UNVERIFIABLE, 0))


def _committed_count(reader: SinkLogReader, ids: list[int]) -> int:
    """The batches of ``ids`` up to the newest, less the newest when it is not committed yet."""
    newest = reader.get(ids[-1])
    return len(ids) - (0 if newest is not None and newest.state is BatchState.COMMITTED else 1)
