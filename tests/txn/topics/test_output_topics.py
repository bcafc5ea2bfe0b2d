"""Pure logic of txn/topics/output_topics.py: comparing output topic identities and judging changes."""
from __future__ import annotations

import pytest

from kafka_eos.txn.topics.output_topics import Change, OutputTopic, accept, compare, judge

OUT = OutputTopic("out", "id-a", 3)


@pytest.mark.parametrize("current, change", [
    (OUT, Change.SAME),
    (OutputTopic("out", "id-a", 5), Change.GREW),
    (OutputTopic("out", "id-a", 2), Change.SHRANK),
    (None, Change.DELETED),
    (OutputTopic("out", "id-b", 3), Change.RECREATED),
    (OutputTopic("out", "id-b", 1), Change.RECREATED),
    (OutputTopic("out", "id-b", 6), Change.RECREATED),
])
def test_compare_names_the_change(current, change):
    assert compare(OUT, current) is change


def test_same_topic_records_nothing_new():
    verdict = judge({"out": OUT}, {"out": OUT})
    assert not verdict.changed and not verdict.refused and not verdict.notes


def test_a_topic_seen_first_is_recorded_and_a_missing_unwritten_one_is_not_judged():
    verdict = judge({}, {"out": OUT, "later": None})
    assert verdict.changed and verdict.identities == {"out": OUT} and not verdict.refused


def test_a_never_recorded_topic_written_by_the_batch_but_gone_is_refused():
    verdict = judge({}, {"out": None}, written={"out"})
    assert [(c.name, c.change) for c in verdict.refused] == [("out", Change.DELETED)]


@pytest.mark.parametrize("current", [None, OutputTopic("out", "id-b", 1), OutputTopic("out", "id-b", 3),
                                     OutputTopic("out", "id-a", 2)])
def test_deleted_recreated_or_shrunk_is_refused_mid_run(current):
    verdict = judge({"out": OUT}, {"out": current})
    assert len(verdict.refused) == 1 and verdict.refused[0].recorded == OUT
    assert verdict.identities == {"out": OUT}  # the record keeps the old identity


def test_growth_is_accepted_with_a_note_unless_the_layout_is_fixed():
    grown = OutputTopic("out", "id-a", 4)
    accepted = judge({"out": OUT}, {"out": grown})
    assert accepted.identities == {"out": grown} and accepted.changed and not accepted.refused
    assert "3 partitions" in accepted.notes[0] and "4 partitions" in accepted.notes[0]
    refused = judge({"out": OUT}, {"out": grown}, fixed_partitions=True)
    assert refused.refused[0].change is Change.GREW and not refused.changed


@pytest.mark.parametrize("current", [OutputTopic("out", "id-b", 3), OutputTopic("out", "id-b", 4), OUT, None])
def test_a_recorded_refusal_holds_at_every_restart_whatever_the_broker_shows(current):
    """Issue 58: the restart after a refusal accepted a re-created topic by itself, so a
    supervisor's restart a second later undid the guard. The refusal now holds until ``accept``."""
    for _ in range(10):
        verdict = judge({"out": OUT}, {"out": current}, refused_before={"out"})
        assert [(c.name, c.held) for c in verdict.refused] == [("out", True)] and not verdict.notes
        assert verdict.identities == {"out": OUT} and "not accepted since" in verdict.refused[0].describe()


def test_a_refusal_of_another_topic_does_not_accept_this_one():
    verdict = judge({"out": OUT}, {"out": OutputTopic("out", "id-b", 3)}, refused_before={"dlq"})
    assert {c.name for c in verdict.refused} == {"out", "dlq"}


@pytest.mark.parametrize("current, fixed, accepted", [
    (OutputTopic("out", "id-b", 3), False, True),
    (OutputTopic("out", "id-b", 4), False, True),
    (OutputTopic("out", "id-b", 1), False, False),
    (None, False, False),
    (OutputTopic("out", "id-b", 3), True, True),
    (OutputTopic("out", "id-b", 4), True, False),
    (OUT, False, True),  # a refusal on a broken metadata answer: the topic is the recorded one again
])
def test_the_operator_accepts_a_held_topic_with_enough_partitions(current, fixed, accepted):
    verdict = accept({"out": OUT}, {"out": current}, fixed_partitions=fixed, held={"out"})
    assert (not verdict.refused) is accepted
    if accepted:
        assert verdict.identities["out"] == current and verdict.changed and "accepted by the operator" in verdict.notes[0]
        assert not judge(verdict.identities, {"out": current}).refused, "the next start writes to it"
    else:
        assert verdict.refused[0].held


def test_acceptance_without_a_refusal_takes_a_change_seen_now_and_nothing_else():
    assert not accept({"out": OUT}, {"out": OUT}).changed, "nothing to accept"
    recreated = OutputTopic("out", "id-b", 3)
    verdict = accept({"out": OUT}, {"out": recreated, "dlq": OutputTopic("dlq", "id-d", 1), "late": None})
    assert verdict.identities == {"out": recreated, "dlq": OutputTopic("dlq", "id-d", 1)} and not verdict.refused
