"""bench.group_fairness: the progress lines it reads and the figures it keeps."""
from __future__ import annotations

from bench.group_fairness import parsed, summary

LOG = """kafka-eos: a group of 2 pipelines in one application: f0 (a), f1 (b)
kafka-eos f0 batch 0: 20000 in, 20000 out, 2 transactions, batch 1900 ms, pre-commit max 20 ms, commit 5 ms
kafka-eos f1 batch 0: 40 in, 40 out, 2 transactions, batch 300 ms, pre-commit max 2 ms, commit 3 ms
kafka-eos f1 batch 1: 0 in, 0 out, 0 transactions, batch 120 ms, pre-commit max 0 ms, commit 0 ms
kafka-eos f12 batch 0: 1 in, nothing committed
"""


def test_progress_lines_give_records_and_batch_ms_per_pipeline():
    assert parsed(LOG) == {"f0": [(20000, 1900)], "f1": [(40, 300), (0, 120)]}


def test_summary_keeps_median_p95_and_records():
    assert summary([(40, 300), (0, 120), (20, 200)]) == {"batches": 3, "p50_ms": 200, "p95_ms": 300, "records": 60}
    assert summary([]) == {"batches": 0}


def test_ratios_split_the_backlogs_cost_from_the_groups():
    from bench.group_fairness import ratios
    arms = {arm: {"small": {"p50_ms": ms}} for arm, ms in (("alone", 400), ("quiet", 800), ("backlog", 1000))}
    assert ratios(arms) == {"backlog/alone": 2.5, "backlog/quiet": 1.25, "quiet/alone": 2.0}
