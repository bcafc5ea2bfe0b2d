"""The prefix claim's rules and its query-start steps, on an in-memory claim log (pure logic)."""
from __future__ import annotations

import pytest

from kafka_eos.txn.topics import prefix_ownership
from kafka_eos.txn.protocol.errors import PrefixClaimedError, SinkLogError
from kafka_eos.txn.topics.prefix_claim import Claim, Verdict, judge, race_winner


def claim_of(checkpoint: str, query_id: str = "q1", owner: str | None = "0000aaaa") -> Claim:
    return Claim("orders", checkpoint, query_id, owner, "2026-01-01T00:00:00+00:00", "host1")


class MemoryClaims:
    """The claim topic as a list of (key, claim) in the broker's order; ``before_write`` lets a
    test append a racer's record between a pipeline's read and its write."""
    topic = "_claims"

    def __init__(self) -> None:
        self.log: list[tuple[str, Claim | None]] = []
        self.before_write = None

    def read(self, prefix, start=None, end=None):
        end = len(self.log) if end is None else end
        return [c for k, c in self.log[start or 0:end] if k == prefix], end

    def write(self, prefix, claim):
        if self.before_write:
            hook, self.before_write = self.before_write, None
            hook()
        self.log.append((prefix, claim))
        return len(self.log) - 1


def test_judge_names_the_four_cases():
    ours = claim_of("/cp/a")
    assert judge(None, ours) == Verdict.CLAIM
    assert judge(claim_of("/cp/a"), ours) == Verdict.OURS
    assert judge(claim_of("/cp/a", query_id="q0"), ours) == Verdict.TAKE_OVER
    assert judge(claim_of("/cp/b"), ours) == Verdict.REFUSE


def test_claims_round_trip_and_an_unknown_version_is_refused():
    claim = claim_of("/cp/a")
    assert Claim.from_json(claim.to_json(), "t") == claim
    with pytest.raises(SinkLogError, match="format 9"):
        Claim.from_json('{"v": 9}', "t")


def test_a_second_checkpoint_is_refused_naming_both_and_the_fixes():
    store = MemoryClaims()
    assert prefix_ownership.claim(store, claim_of("/cp/a"), lambda o: None) == Verdict.CLAIM
    with pytest.raises(PrefixClaimedError) as refused:
        prefix_ownership.claim(store, claim_of("/cp/b", "q2", "0000bbbb"), lambda o: None)
    text = str(refused.value)
    assert "/cp/a" in text and "/cp/b" in text and "kafka-eos retire" in text and "unset" in text
    assert len(store.log) == 1  # the refused pipeline wrote nothing
    assert prefix_ownership.claim(store, claim_of("/cp/a"), lambda o: None) == Verdict.OURS


def test_a_recreated_checkpoint_takes_over_and_aborts_the_old_owner():
    store, aborted = MemoryClaims(), []
    prefix_ownership.claim(store, claim_of("/cp/a", "q1", "0000aaaa"), aborted.append)
    assert prefix_ownership.claim(store, claim_of("/cp/a", "q2", "0000cccc"), aborted.append) == Verdict.TAKE_OVER
    assert aborted == ["0000aaaa"] and store.log[-1][1].query_id == "q2"


def test_of_two_racing_claims_the_first_written_wins_and_stays_the_latest():
    store = MemoryClaims()
    first = claim_of("/cp/a")
    store.before_write = lambda: store.log.append(("orders", first))  # a racer writes after our read
    with pytest.raises(PrefixClaimedError, match="/cp/a"):
        prefix_ownership.claim(store, claim_of("/cp/b", "q2", "0000bbbb"), lambda o: None)
    assert store.log[-1][1] == first  # the loser restored the winner's claim
    assert race_winner([first, None], claim_of("/cp/b")) is None  # a release in between frees the prefix


def test_release_tombstones_only_our_own_claim():
    store = MemoryClaims()
    prefix_ownership.claim(store, claim_of("/cp/a"), lambda o: None)
    assert prefix_ownership.release(store, "orders", "/cp/b") is None and store.log[-1][1] is not None
    assert prefix_ownership.release(store, "orders", "/cp/a").checkpoint == "/cp/a"
    assert store.log[-1] == ("orders", None)
    assert prefix_ownership.claim(store, claim_of("/cp/b", "q2", "0000bbbb"), lambda o: None) == Verdict.CLAIM


def test_other_prefixes_do_not_count():
    store = MemoryClaims()
    store.log.append(("payments", claim_of("/cp/z")))
    assert prefix_ownership.claim(store, claim_of("/cp/a"), lambda o: None) == Verdict.CLAIM
