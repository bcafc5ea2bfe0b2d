"""Who owns a transactional-id prefix: the claim record and the rules that judge it (pure logic).

Why a claim the brokers arbitrate. Kafka already arbitrates transactional ids (the newest
``init_transactions`` fences the others), but that is the very mechanism two pipelines sharing a
prefix turn against each other: each one's lingering-transaction cleanup aborts the other's open
transactions and neither is told why. Flink and Kafka Streams leave the prefix's uniqueness to
the user (Flink's ``transactionalIdPrefix``, Streams' ``application.id``); Streams at least gets a
shared place to see conflicts, its consumer group. kafka-eos keeps the same shared place on the
cluster the ids live on: a compacted one-partition topic (``ClaimTopic``) keyed by prefix, whose
single partition gives every claim one total order that all pipelines see. A local lock file
could not see a pipeline on another host; the sink log is per checkpoint, so it cannot see
another checkpoint at all.

Rules enforced here:
- A ``Claim`` is versioned JSON {v, prefix, checkpoint, query_id, owner, claimed_at, host};
  an unknown version is refused, never guessed. A tombstone (no value) releases the prefix.
- ``judge``: no claim -> CLAIM (write ours); the same checkpoint and query id -> OURS; the same
  checkpoint location with another query id (the checkpoint was deleted and created anew) ->
  TAKE_OVER (write ours, with a warning; the old owner's open transactions are aborted);
  another checkpoint -> REFUSE (``PrefixClaimedError`` naming both checkpoints).
- ``race_winner``: two pipelines that both read "no claim" both write; the claim the broker
  appended first wins (each checks the records between what it read and its own). The loser restores the winner's
  claim as the latest value (so compaction keeps the winner) and is refused.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import Enum

from kafka_eos.txn.protocol.errors import SinkLogError

CLAIM_FORMAT = 1
DEFAULT_CLAIM_TOPIC = "_kafka_eos_prefix_claims"


@dataclass(frozen=True)
class Claim:
    prefix: str
    checkpoint: str
    query_id: str | None
    owner: str | None  # the owner part of the ids (None: the legacy ids without owner)
    claimed_at: str
    host: str

    def to_json(self) -> str:
        return json.dumps({"v": CLAIM_FORMAT, **asdict(self)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes, source: str) -> "Claim":
        data = json.loads(text)
        if data.get("v") != CLAIM_FORMAT:
            raise SinkLogError(f"{source}: prefix claim format {data.get('v')!r} is not {CLAIM_FORMAT}; "
                               "this kafka-eos build cannot read it (use the build that wrote it)")
        return cls(**{k: data.get(k) for k in ("prefix", "checkpoint", "query_id", "owner", "claimed_at", "host")})

    def same_pipeline(self, other: "Claim") -> bool:
        return (self.checkpoint, self.query_id) == (other.checkpoint, other.query_id)


class Verdict(str, Enum):
    CLAIM = "claim"
    OURS = "ours"
    TAKE_OVER = "take-over"
    REFUSE = "refuse"


def judge(latest: Claim | None, ours: Claim) -> Verdict:
    """What a pipeline starting with claim ``ours`` does, given the prefix's latest claim."""
    if latest is None:
        return Verdict.CLAIM
    if latest.same_pipeline(ours):
        return Verdict.OURS
    if latest.checkpoint == ours.checkpoint:
        return Verdict.TAKE_OVER
    return Verdict.REFUSE


def race_winner(written_before_ours: list[Claim | None], ours: Claim) -> Claim | None:
    """The claim that beat ours: the prefix's state just before our record (the last of the records
    written between what we read and ours; a tombstone releases) when it is another checkpoint's
    (None: ours stands)."""
    state = written_before_ours[-1] if written_before_ours else None
    return state if state is not None and state.checkpoint != ours.checkpoint else None
