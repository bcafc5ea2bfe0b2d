"""The query-start claim of a transactional-id prefix, and its release, as numbered steps.

``claim`` (the driver, once per query start, before recovery opens anything):
  1. read the prefix's latest claim (``ClaimTopic.read``);
  2. judge it (``prefix_claim.judge``): ours -> done; another checkpoint -> ``PrefixClaimedError``
     naming both checkpoints (nothing was written);
  3. a take-over (the same checkpoint location with a new query id: the checkpoint was deleted
     and created anew) is logged as a warning, and the old owner's open transactions are aborted
     (nothing of a deleted checkpoint can still be committed);
  4. write our claim, then read the records between step 1's end and ours: a claim of another
     checkpoint there won the race (the broker's order); ours is undone by writing the winner's
     claim again, and ``PrefixClaimedError`` is raised.
``release`` (``kafka-eos retire``) writes a tombstone, only when the latest claim is this
checkpoint's. The topic and the aborter are passed in (``ClaimTopic``; tests pass fakes).
"""
from __future__ import annotations

import logging
from typing import Callable, Protocol, cast

from kafka_eos.txn.protocol.errors import PrefixClaimedError
from kafka_eos.txn.topics.prefix_claim import Claim, Verdict, judge, race_winner

log = logging.getLogger(__name__)


class ClaimStore(Protocol):
    topic: str

    def read(self, prefix: str, start: int | None = None, end: int | None = None) -> tuple[list[Claim | None], int]: ...
    def write(self, prefix: str, claim: Claim | None) -> int: ...


def latest(records: list[Claim | None]) -> Claim | None:
    return records[-1] if records else None


def _refusal(store: ClaimStore, ours: Claim, theirs: Claim) -> PrefixClaimedError:
    return PrefixClaimedError.of_claims(ours.prefix, ours.checkpoint, theirs.checkpoint, theirs.claimed_at,
                                        theirs.host, store.topic)


def claim(store: ClaimStore, ours: Claim, abort_owner: Callable[[str | None], object]) -> Verdict:
    """Steps 1-4; ``abort_owner(owner)`` aborts the open transactions of an old owner's ids."""
    records, end = store.read(ours.prefix)                                           # step 1
    current = latest(records)
    verdict = judge(current, ours)                                                   # step 2
    if verdict == Verdict.OURS:
        return verdict
    if verdict == Verdict.REFUSE:
        raise _refusal(store, ours, cast(Claim, current))  # judge() refuses only a latest claim
    if verdict == Verdict.TAKE_OVER:                                                 # step 3
        theirs = cast(Claim, current)  # judge() takes over only a latest claim
        log.warning("kafka-eos: transactional.id.prefix %r was claimed by query %s of checkpoint %s (claimed %s "
                    "on %s); that checkpoint was created anew (query %s): taking the prefix over and aborting "
                    "the old query's open transactions", ours.prefix, theirs.query_id, theirs.checkpoint,
                    theirs.claimed_at, theirs.host, ours.query_id)
        if theirs.owner != ours.owner:
            abort_owner(theirs.owner)
    offset = store.write(ours.prefix, ours)                                          # step 4
    between, _ = store.read(ours.prefix, end, offset)
    winner = race_winner(between, ours)
    if winner is not None:
        store.write(ours.prefix, winner)
        raise _refusal(store, ours, winner)
    return verdict


def release(store: ClaimStore, prefix: str, checkpoint: str) -> Claim | None:
    """Tombstone the prefix's claim if it is ``checkpoint``'s; the claim released (None: none was ours)."""
    current = latest(store.read(prefix)[0])
    if current is None or current.checkpoint != checkpoint:
        return None
    store.write(prefix, None)
    return current
