"""FollowAudit: committed batches judged one after another as their output arrives (``verify --follow``).

The partitions' scans (``PartitionScan`` with ``keep_all``: every committed transaction is a found
part) stay open between rounds and are read on from where they stopped. Each round:
  1. the pending batches (committed in the sink log, not judged yet) are taken in batch order;
  2. a batch is ready when every part its handles name is found committed or aborted in the log,
     or when it was committed more than ``grace_ms`` ago (a committed transaction's markers
     reach its partitions a moment after EndTxn answers); the first batch not ready ends the
     round, so the judged batches stay a prefix of the committed ones;
  3. a ready batch is judged by ``output_audit.judge``; then, in each partition it wrote, a
     committed transaction no batch claims (another writer's) and a non-transactional record
     lying before its records fail it, with their offset (``output_audit.place_foreign``'s rule),
     unless they precede the first batch judged in that partition (or the first after batches
     that aged out, ``unanchor``): those are reported as outside the batches followed
     (``outside``), as ``verify`` reports what precedes its range;
  4. what a judged batch claimed, and the foreign records placed, leave the scans: memory holds
     only the output not judged yet.
Pure logic: the reading is the caller's (``connectors/operate/verify_follow``).
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.audit.output_audit import FAILED, BatchVerdict, PartitionScan, judge

GRACE_MS = 30_000
KEEP_ABORTED = 1_000   # aborted transactions remembered per partition (for the message naming one)


@dataclass(frozen=True)
class Pending:
    batch_id: int
    handles: tuple[TxnHandle, ...]      # the committed handles that wrote records
    committed_at_ms: int | None


def _keys(handles: tuple[TxnHandle, ...]) -> set[tuple[int, int]]:
    return {(h.producer_id, h.producer_epoch) for h in handles}


def _parts(handles: tuple[TxnHandle, ...]) -> set[tuple[str, int]]:
    return {(t, int(p)) for h in handles for t, ps in h.partitions.items() for p in ps}


def ready(batch: Pending, scans: dict[tuple[str, int], PartitionScan], now_ms: int, grace_ms: int = GRACE_MS) -> bool:
    """Step 2."""
    if batch.committed_at_ms is None or now_ms - batch.committed_at_ms > grace_ms:
        return True
    for h in batch.handles:
        key = (h.producer_id, h.producer_epoch)
        for topic, ps in h.partitions.items():
            for p in ps:
                scan = scans.get((topic, int(p)))
                if scan is None or (key not in scan.found and key not in scan.aborted):
                    return False
    return True


def judge_round(pending: list[Pending], scans: dict[tuple[str, int], PartitionScan], now_ms: int,
                grace_ms: int = GRACE_MS, outside: list[str] | None = None) -> list[BatchVerdict]:
    """Steps 1-4 for ``pending`` (in batch order); returns the verdicts of the batches judged (the
    records outside them are appended to ``outside``)."""
    claimed = set().union(*(_keys(b.handles) for b in pending)) if pending else set()
    verdicts = []
    for batch in pending:
        if not ready(batch, scans, now_ms, grace_ms):
            break
        verdict = judge(batch.batch_id, list(batch.handles), scans)
        _place_foreign(verdict, batch, scans, claimed, [] if outside is None else outside)
        _forget(batch, scans)
        verdicts.append(verdict)
    return verdicts


def _place_foreign(verdict: BatchVerdict, batch: Pending, scans: dict[tuple[str, int], PartitionScan],
                   claimed: set[tuple[int, int]], outside: list[str]) -> None:
    """Step 3."""
    mine = _keys(batch.handles)
    for topic, p in sorted(_parts(batch.handles)):
        scan = scans.get((topic, p))
        if scan is None:
            continue
        firsts = [part.first for key, part in scan.found.items() if key in mine]
        if not firsts:
            continue
        first = min(firsts)
        others = [key for key, part in scan.found.items() if part.first < first and key not in claimed]
        placed = [(scan.found[key].first, key[0], scan.found.pop(key).records) for key in others]
        placed += [f for f in scan.foreign if f[0] < first]
        scan.foreign[:] = [f for f in scan.foreign if f[0] >= first]
        for offset, pid, records in sorted(placed):
            what = f"{records} record(s) of another writer (producer {pid}) that read_committed readers see"
            if scan.anchored:
                verdict.fail(FAILED, topic, p, offset, what)
            else:
                outside.append(f"{topic}[{p}] offset {offset}: {what} (before the first batch followed in the "
                               "partition, or after batches that aged out: not attributed)")
        scan.anchored = True


def unanchor(scans: dict[tuple[str, int], PartitionScan]) -> None:
    """Batches aged out unjudged: their records in the scans belong to no batch known any more, so
    what precedes the next batch judged in each partition is not attributed (step 3)."""
    for scan in scans.values():
        scan.anchored = False


def _forget(batch: Pending, scans: dict[tuple[str, int], PartitionScan]) -> None:
    """Step 4."""
    mine = _keys(batch.handles)
    for where in _parts(batch.handles):
        scan = scans.get(where)
        if scan is None:
            continue
        for key in mine:
            scan.found.pop(key, None)
        if len(scan.aborted) > KEEP_ABORTED:
            for key in list(scan.aborted)[:len(scan.aborted) - KEEP_ABORTED]:
                del scan.aborted[key]
