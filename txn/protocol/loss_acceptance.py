"""Going on after ``ReplayMismatchError``: accept, once, the loss of a batch's lost sink partitions.

When the broker aborted some transactions of a decided batch and its replay does not give the
decided rows, step 2 of the protocol refuses to re-write them. ``accept_loss`` is the way on: it
records the batch as ``committed`` in the sink log, create-only, with the lost partitions still
marked ``lost`` and the metrics ``accepted_lost_records`` / ``accepted_lost_partitions``. The next
run then replays the batch as a committed one (step 1): it commits nothing of it again, so no
record is duplicated, and the records of the lost partitions (the count the refusal named) stay
missing from the output; their source offsets are in the checkpoint's ``offsets/<batch id>``.

It enforces: only the sink log's last batch, only while it is decided with lost partitions and
nothing pending (pending transactions are the query's own recovery to commit), and only once (the
record it writes is ``committed``; a second call is refused, a concurrent writer meets
``SinkLogConflictError``).
"""
from __future__ import annotations

from kafka_eos.txn.protocol.errors import TwoPhaseCommitError
from kafka_eos.txn.log.sink_log import COMMITTED, LOST, PENDING, BatchRecord, SinkLog

ACCEPTED_RECORDS, ACCEPTED_PARTITIONS = "accepted_lost_records", "accepted_lost_partitions"


class NothingToAcceptError(TwoPhaseCommitError, ValueError):
    """The named batch is not one whose loss can be accepted; the message says why and what to do."""


def _acceptable(last: BatchRecord | None, batch_id: int, where: str) -> BatchRecord:
    if last is None:
        raise NothingToAcceptError(f"{where}: the sink log has no batch; there is nothing to accept")
    if last.batch_id != batch_id:
        raise NothingToAcceptError(f"{where}: batch {batch_id} is not the sink log's last batch ({last.batch_id}); "
                                   "only the batch a restart replays can be accepted")
    if last.state == COMMITTED:
        accepted = last.metrics.get(ACCEPTED_RECORDS)
        said = "nothing was lost" if accepted is None else f"its loss of {int(accepted)} records was already accepted"
        raise NothingToAcceptError(f"{where}: batch {batch_id} is committed ({said}); start the query")
    if last.partitions_with(PENDING):
        pending = sorted(last.partitions_with(PENDING))
        raise NothingToAcceptError(f"{where}: batch {batch_id} still has pending transactions {pending}: "
                                   "start the query, its recovery commits them")
    if not last.partitions_with(LOST):
        raise NothingToAcceptError(f"{where}: batch {batch_id} has no lost sink partition; start the query")
    return last


def lost_records(record: BatchRecord) -> int:
    """Records of ``record``'s lost sink partitions: what accepting its loss drops."""
    return sum(record.records_of(p) for p in record.partitions_with(LOST))


def accept_loss(log: SinkLog, batch_id: int) -> BatchRecord:
    """Record batch ``batch_id`` committed without its lost partitions; returns the new record."""
    last = _acceptable(log.latest(), batch_id, log.store.location)
    lost = last.partitions_with(LOST)
    kept = sum(h.records for h in last.handles if h.sink_partition not in lost)
    metrics = {**last.metrics, "records": float(kept), "transactions": 0.0, "commit_ms": 0.0,
               "precommit_max_ms": 0.0, ACCEPTED_RECORDS: float(lost_records(last)),
               ACCEPTED_PARTITIONS: float(len(lost))}
    return log.append(BatchRecord(batch_id, COMMITTED, last.num_partitions, last.handles, last.status, metrics,
                                  inputs=last.inputs), last)
