"""Transactional ids per task attempt, the writer's guard against stale attempts, multi-point fault plans."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.protocol.transactional_ids import ATTEMPT_IDS, TransactionalIdFactory, owner_of


def test_attempt_zero_keeps_the_ids_of_earlier_releases():
    ids = TransactionalIdFactory("q1")
    assert [ids.id_for(3, batch) for batch in range(4)] == ["q1-3-0", "q1-3-1", "q1-3-0", "q1-3-1"]


def test_attempts_of_one_task_get_distinct_ids():
    ids = TransactionalIdFactory("q1")
    attempts = [ids.id_for(0, 7, attempt) for attempt in range(ATTEMPT_IDS)]
    assert len(set(attempts)) == ATTEMPT_IDS


def test_no_id_is_shared_by_two_batch_slots_whatever_the_attempt():
    ids = TransactionalIdFactory("q1", slots=2)
    even = {ids.id_for(0, 4, a) for a in range(20)}
    odd = {ids.id_for(0, 5, a) for a in range(20)}
    assert not even & odd


def test_attempt_numbers_above_the_bound_share_the_last_id():
    ids = TransactionalIdFactory("q1")
    assert ids.id_for(0, 1, ATTEMPT_IDS - 1) == ids.id_for(0, 1, ATTEMPT_IDS + 5)


def test_the_set_of_ids_is_bounded_by_partitions_slots_and_attempts():
    ids = TransactionalIdFactory("q1", slots=2)
    used = {ids.id_for(p, b, a) for p in range(3) for b in range(100) for a in range(10)}
    assert len(used) == 3 * 2 * ATTEMPT_IDS


def test_every_id_keeps_the_shape_the_aborter_lists():
    ids = TransactionalIdFactory("orders.eos")
    for attempt in range(ATTEMPT_IDS + 2):
        tid = ids.id_for(12, 9, attempt)
        assert ids.owns(tid) and ids.pattern().match(tid)
    assert not ids.owns("orders.eos-1-2-3") and not ids.owns("other-1-2")


def test_negative_attempt_is_refused():
    with pytest.raises(ValueError):
        TransactionalIdFactory("q1").id_for(0, 0, -1)


def test_invalid_prefix_names_the_setting():
    with pytest.raises(SinkConfigError, match="transactional.id.prefix"):
        TransactionalIdFactory("bad prefix")


# -- owners: two pipelines given one prefix never share an id --------------------------------------


def test_owner_ids_carry_the_owner_and_the_legacy_ids_do_not():
    owner = owner_of("query-a")
    assert TransactionalIdFactory("p", owner=owner).id_for(3, 1) == f"p-{owner}-3-1"
    assert TransactionalIdFactory("p").id_for(3, 1) == "p-3-1"


def test_an_owner_pattern_matches_only_its_owner_and_legacy_only_legacy():
    a, b = owner_of("query-a"), owner_of("query-b")
    ids_a, ids_b, legacy = (TransactionalIdFactory("p", owner=a), TransactionalIdFactory("p", owner=b),
                            TransactionalIdFactory("p"))
    for attempt in range(ATTEMPT_IDS):
        tid_a, tid_b, tid_l = ids_a.id_for(2, 5, attempt), ids_b.id_for(2, 5, attempt), legacy.id_for(2, 5, attempt)
        assert ids_a.owns(tid_a) and not ids_a.owns(tid_b) and not ids_a.owns(tid_l)
        assert legacy.owns(tid_l) and not legacy.owns(tid_a) and not legacy.owns(tid_b)
    digits = TransactionalIdFactory("p", owner="12345678")  # an all-digit owner is not a legacy id
    assert not legacy.owns(digits.id_for(0, 0)) and not digits.owns(legacy.id_for(0, 0))


def test_prefix_wide_ids_match_every_owner_and_name_it():
    wide = TransactionalIdFactory("p").prefix_wide()
    owner = owner_of("q")
    assert wide.owns(f"p-{owner}-0-1") and wide.owns("p-0-1") and not wide.owns("px-0-1")
    assert wide.owner_in(f"p-{owner}-0-1") == owner and wide.owner_in("p-0-1") is None


def test_an_owner_that_is_not_eight_hex_digits_is_refused():
    with pytest.raises(ValueError, match="owner"):
        TransactionalIdFactory("p", owner="Q-1")


def test_id_pool_is_bounded_whatever_the_number_of_batches():
    ids = TransactionalIdFactory("orders", slots=2)
    used = {ids.id_for(k, batch) for k in range(4) for batch in range(1000)}
    assert len(used) == 8
    assert ids.id_for(3, 10) != ids.id_for(3, 11)  # consecutive batches never share an id
    assert ids.owns("orders-3-1") and not ids.owns("orders-x-3-1") and not ids.owns("orders2-3-1")


def test_invalid_prefix_is_refused():
    with pytest.raises(SinkConfigError, match="transactional.id.prefix"):
        TransactionalIdFactory("has space")
