"""The sink side of ``kafka-eos status`` as facts and attention lines (pure functions).

Attention (one line each, with the fix):
- the last decision is ``decided-pending``: its transactions wait for their commit, which the
  next run makes before its first batch; after ``transaction.timeout.ms`` the broker aborts
  them and the run re-writes them instead;
- the last decision is ``lost``: the next run replays that batch and re-writes the lost partitions;
- input has waited with no batch committed for longer than the pipeline's stall threshold
  (``txn.stall``, the value KafkaEosNoBatchCommitted uses): the driver is dead, frozen or cut off
  (whether its metrics endpoint answers is said), or a broker it needs does not answer;
- an open transaction that is not a pending one of the decision and is older than the stall
  threshold (longer than the pipeline's batches take): a dead, frozen or cut-off run or task
  attempt holds it; read_committed readers of its partitions wait for it;
- the newest ``kafka-eos verify`` run found a batch failed (``verify_facts``);
- continuous verification (``verify --follow``) is behind its bound, or batches aged out of the
  sink log before it judged them (``verify_facts``, from ``follow_state.follow_lag``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_eos.txn.log.sink_status import Decision, DecisionState, OpenTransaction, still_open
from kafka_eos.txn.log.follow_state import DELAY_BOUND_S, FollowLag
from kafka_eos.txn.log.verify_runs import VerifyRun

if TYPE_CHECKING:
    from kafka_eos.connectors.operate.stall_check import StallFacts

FAILED = "failed"  # txn.output_audit's outcome, as the verify run records it
STALL_RUNBOOK = "docs/runbooks.md#no-batch-committed-a-stalled-pipeline"


def decision_facts(decision: Decision) -> dict[str, Any]:
    if decision.state is DecisionState.NONE:
        return {"state": str(decision.state)}
    return {"state": str(decision.state), "batch": decision.batch_id, "sink_partitions": decision.num_partitions,
            "records": decision.records, "committed_partitions": list(decision.committed),
            "pending": [{"sink_partition": p.sink_partition, "transactional_id": p.transactional_id,
                         "records": p.records} for p in decision.pending],
            "lost_partitions": list(decision.lost), "lost_records": decision.lost_records}


def open_facts(opened: list[OpenTransaction]) -> dict[str, Any]:
    return {"transactions": [{"transactional_id": t.transactional_id, "state": t.state,
                              "producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
                              "age_ms": t.age_ms, "timeout_ms": t.timeout_ms, "remaining_ms": t.remaining_ms,
                              "partitions": list(t.partitions)} for t in opened]}


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.0f} s"


def _pending(decision: Decision, opened: list[OpenTransaction] | None, origin: str) -> str:
    matched, gone = still_open(decision, opened) if opened is not None else ([], [])
    parts = ", ".join(str(p.sink_partition) for p in decision.pending)
    records = sum(p.records for p in decision.pending)
    line = (f"batch {decision.batch_id} is decided but not committed: {len(decision.pending)} transaction(s) "
            f"of sink partitions {parts or '-'} ({records} records) wait for their commit")
    if matched:
        line += f"; the broker aborts them in {_seconds(min(t.remaining_ms for t in matched))} (transaction.timeout.ms)"
    if gone:
        line += (f"; {len(gone)} of them are no longer open (committed by a run that crashed before recording "
                 "it, or aborted by the broker: the next run finds out and re-writes the aborted ones)")
    return (line + f" - fix: run the pipeline (kafka-eos run {origin}); it commits them before its first "
            "batch (if it is running now, this is the commit of its current batch: check again)")


def _lost(decision: Decision, origin: str) -> str:
    parts = ", ".join(str(p) for p in decision.lost)
    return (f"batch {decision.batch_id}: the broker aborted the decided transactions of sink partitions {parts} "
            f"({decision.lost_records} records) before they were committed; their data is not in the output "
            f"yet - fix: run the pipeline (kafka-eos run {origin}); it replays batch {decision.batch_id} and "
            "re-writes exactly those partitions")


def _lingering(txn: OpenTransaction, threshold_ms: float, origin: str) -> str:
    return (f"transaction {txn.transactional_id} has been open {_seconds(txn.age_ms)}, longer than this "
            f"pipeline's batches take (its stall threshold, {_seconds(int(threshold_ms))}): a dead, frozen or "
            f"cut-off run or task attempt holds it; read_committed readers of "
            f"{', '.join(txn.partitions) or 'its partitions'} wait until it ends (the broker aborts it in "
            f"{_seconds(txn.remaining_ms)}) - fix: if the pipeline's driver is not running or does not answer, "
            f"restart it (kafka-eos run {origin}); it aborts lingering transactions once recovery is done")


def stall(facts: "StallFacts", now_s: float, origin: str) -> list[str]:
    """An attention line when input has waited past the stall threshold, saying why it may have."""
    if not facts.stalled:
        return []
    since = ("no batch committed yet" if facts.last_commit_s is None else
             f"last batch committed {now_s - facts.last_commit_s:.0f} s ago")
    driver = ("" if facts.driver is None else f"; the driver {facts.driver}")
    return [f"no batch committed while input waits: {facts.records_waiting} records have waited "
            f"{facts.waiting_s:.0f} s ({since}), longer than this pipeline's stall threshold of "
            f"{facts.threshold_s:.0f} s{driver} - fix: the driver is dead, frozen or cut off: restart it "
            f"(kafka-eos run {origin}); if it runs and answers, a broker it needs does not: see {STALL_RUNBOOK}"]


def attention(decision: Decision, opened: list[OpenTransaction] | None, threshold_ms: float,
              origin: str) -> list[str]:
    """What needs attention, one line each (``opened``: None when they could not be listed;
    ``threshold_ms``: the stall threshold, longer than a running batch's transaction is open)."""
    lines = []
    if decision.state is DecisionState.DECIDED_PENDING:
        lines.append(_pending(decision, opened, origin))
    elif decision.state is DecisionState.LOST:
        lines.append(_lost(decision, origin))
    if opened is not None:
        matched, _ = still_open(decision, opened)
        lines += [_lingering(t, threshold_ms, origin) for t in opened if t not in matched and t.age_ms > threshold_ms]
    return lines


def verify_facts(run: VerifyRun | None, origin: str | None,
                 follow: FollowLag | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """The newest verify run and the follower's lag as facts, and attention lines: a batch failed,
    the follower behind its bound, batches aged out unverified."""
    if run is None and follow is None:
        return None, []
    facts: dict[str, Any] = {} if run is None else {
        "at_ms": run.at_ms, "newest_verified_batch": run.newest_verified,
        "batches": {outcome: len(ids) for outcome, ids in sorted(run.outcomes.items())},
        "first_problem": run.first_problem}
    lines = [] if run is None else _failed(run, origin)
    if follow is not None:
        facts["follow"] = {"verified_through": follow.verified_through, "unverified_batches": follow.unverified,
                           "oldest_unverified_s": follow.oldest_unverified_s, "aged_out": follow.aged_out,
                           "failed": follow.failed, "unverifiable": follow.unverifiable, "at_ms": follow.at_ms}
        lines += _follow_attention(follow, origin or "pipeline.yaml")
    return facts, lines


def _failed(run: VerifyRun, origin: str | None) -> list[str]:
    failed = run.outcomes.get(FAILED, [])
    if not failed:
        return []
    where = run.first_problem or {}
    return [f"the last kafka-eos verify found {len(failed)} batch(es) failed, first batch {where.get('batch')} at "
            f"{where.get('topic')}[{where.get('partition')}] offset {where.get('offset')} - fix: run "
            f"kafka-eos verify {origin or 'pipeline.yaml'} for each problem, and see docs/runbooks.md#verify-failed"]


def _follow_attention(follow: FollowLag, origin: str) -> list[str]:
    lines = []
    if follow.oldest_unverified_s > DELAY_BOUND_S:
        lines.append(f"continuous verification is behind: batch {follow.verified_through + 1} was committed "
                     f"{follow.oldest_unverified_s:.0f} s ago and is not verified ({follow.unverified} batches wait) "
                     f"- fix: check that kafka-eos verify --follow {origin} runs; see docs/runbooks.md#verify-behind")
    if follow.aged_out:
        lines.append(f"{follow.aged_out} committed batch(es) left the sink log before continuous verification judged "
                     "them - fix: keep the follower running, or raise sink.evidence_retention_ms; see "
                     "docs/runbooks.md#verify-aged-out")
    return lines
