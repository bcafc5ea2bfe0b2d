"""FaultPlan: several points, each with its own release; a paused input fires after its first item."""
from __future__ import annotations

import pytest

from kafka_eos.txn.protocol.faults import FaultPlan, paused


def test_several_fault_points_with_their_own_release(tmp_path):
    plan = FaultPlan.parse("task_start@1, before_decision@3", str(tmp_path))
    assert plan.point == "task_start" and plan.batch_id == 1
    assert plan.targets() == (("task_start", 1), ("before_decision", 3))
    (tmp_path / "release-before_decision").write_text("go")
    plan.hit("before_decision", 3)                        # released by its own file: returns
    plan.hit("task_start", 2)                             # another batch: not a target
    assert [p.name for p in sorted(tmp_path.glob("before_decision.*"))] and not list(tmp_path.glob("task_start.*"))
    with pytest.raises(ValueError, match="twice"):
        FaultPlan.parse("task_start@1,task_start@2", str(tmp_path))


def test_paused_before_first_fires_after_the_first_item_arrives(tmp_path):
    seen = []

    class Plan:
        def hit(self, point, batch_id):
            seen.append((point, batch_id, list(consumed)))

    consumed = []

    def source():
        for n in range(3):
            consumed.append(n)
            yield n

    assert list(paused(source(), Plan(), 4, on_first="task_start")) == [0, 1, 2]
    assert seen == [("task_start", 4, [0])]
