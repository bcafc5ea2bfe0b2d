"""The planning steps of one micro-batch's end (offsets.plan_steps), each alone, then wired."""
from __future__ import annotations

import json

import pytest

from kafka_eos.offsets import model
from kafka_eos.offsets import plan_steps as steps
from kafka_eos.offsets.data_loss import DataLossFinding
from kafka_eos.offsets.plan_steps import KafkaView

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


class FakeLookups:
    def __init__(self, earliest: dict, latest: dict):
        self._earliest, self._latest, self.asked = earliest, latest, []

    def partitions(self, subscription):
        self.asked.append(subscription)
        return set(self._latest)

    def earliest(self, tps):
        return {tp: self._earliest[tp] for tp in tps}

    def latest(self, tps):
        return {tp: self._latest[tp] for tp in tps}


def view(earliest: dict, latest: dict) -> KafkaView:
    return KafkaView(frozenset(latest), earliest, latest)


def test_look_up_reads_the_subscriptions_partitions_within_the_available_now_target():
    kafka = FakeLookups({A0: 0, A1: 2, B0: 0}, {A0: 10, A1: 5, B0: 7})
    assert steps.look_up(kafka, "sub", None) == view({A0: 0, A1: 2, B0: 0}, {A0: 10, A1: 5, B0: 7})
    assert steps.look_up(kafka, "sub", {A0: 4, B0: 1}) == view({A0: 0, B0: 0}, {A0: 10, B0: 7})
    assert kafka.asked == ["sub", "sub"]


def test_resume_points_skip_deleted_ranges_and_leave_out_reset_and_vanished_partitions():
    found = view({A0: 5, A1: 0}, {A0: 9, A1: 3})
    begin = {A0: 2, A1: 8, B0: 4}            # A0 deleted below 5, A1 beyond its end (reset), B0 gone
    findings = steps.find_data_loss(begin, found)
    assert sorted((f.kind, f.tp) for f in findings) == [("offsets-deleted", A0), ("offsets-reset", A1),
                                                        ("partition-gone", B0)]
    resume = steps.resume_points(begin, found, findings)
    assert resume.start == {A0: 5} and resume.reset == {A1: 0}


def test_available_ends_are_the_latest_capped_by_the_target_and_never_behind_the_start():
    assert steps.available_ends({A0: 2, A1: 3}, {A0: 10, A1: 8}, None) == {A0: 10, A1: 8}
    assert steps.available_ends({A0: 2, A1: 3}, {A0: 10, A1: 8}, {A0: 6}) == {A0: 6, A1: 8}
    assert steps.available_ends({A0: 7}, {A0: 10}, {A0: 6}) == {A0: 7}     # past the target: stays


def test_entering_partitions_start_at_their_earliest_offset():
    found = view({A0: 0, A1: 3, B0: 2}, {A0: 9, A1: 5, B0: 6})
    assert steps.entering_partitions({A0: 9}, found, {B0}, {A1: 3}) == {A0: 9, A1: 3, B0: 2}


def test_plan_end_hands_findings_to_the_policy_then_aligns_then_admits():
    found = view({A0: 0, A1: 0, B0: 4}, {A0: 100, A1: 100, B0: 50})
    seen, aligned = [], []

    def align(start, end, latest):
        aligned.append((dict(start), dict(end), dict(latest)))
        return {**end, A1: 20}

    end = steps.plan_end({A0: 0, A1: 10}, found, {A0: 80, A1: 100, B0: 50}, seen.append, align=align, max_rows=30)
    assert [[f.kind for f in batch] for batch in seen] == [["new-partition-truncated"]]
    assert aligned == [({A0: 0, A1: 10}, {A0: 80, A1: 100}, {A0: 100, A1: 100, B0: 50})]
    assert sum(end[tp] - start for tp, start in {A0: 0, A1: 10}.items()) == 30 and end[A1] <= 20
    assert end[B0] == 4                       # the new partition enters at its earliest offset


def test_plan_end_stops_when_the_policy_raises():
    def fail(findings: list[DataLossFinding]) -> None:
        if findings:
            raise RuntimeError(findings[0].message(failing=True))

    with pytest.raises(RuntimeError, match="offsets-deleted|were deleted"):
        steps.plan_end({A0: 1}, view({A0: 5}, {A0: 9}), None, fail)
    assert steps.plan_end({A0: 6}, view({A0: 5}, {A0: 9}), None, fail) == {A0: 9}


def test_batch_end_keeps_the_start_text_without_new_data_and_records_batch_zeros_start():
    started = json.loads(json.dumps(model.encode({A0: 4, A1: 2})))
    assert steps.batch_end(started, {A0: 4, A1: 2}, {A0: 4, A1: 2}) is not started
    assert json.dumps(steps.batch_end(started, {A0: 4, A1: 2}, {A0: 4, A1: 2})) == json.dumps(started)
    assert steps.batch_end(started, {A0: 4, A1: 2}, {A0: 6, A1: 2}) == model.encode({A0: 6, A1: 2})
    initial = model.encode({A0: 4}, initial=True)
    stored = steps.batch_end(initial, {A0: 4}, {A0: 4})
    assert stored == model.encode({A0: 4}, start={A0: 4}) and model.planned_start(stored) == {A0: 4}
    assert steps.held_end(initial, {A0: 4}) == stored and steps.held_end(started, {A0: 4, A1: 2}) == started
