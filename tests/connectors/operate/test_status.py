"""`kafka-eos status` without a broker: attention lines, exit codes, rendering (redacted, JSON)."""
from __future__ import annotations

import json

from kafka_eos.connectors.operate import status
from kafka_eos.connectors.operate.status_facts import attention, decision_facts
from kafka_eos.txn.log.sink_status import Decision, DecisionState, OpenTransaction, PendingTransaction
from tests.factories import load, valid

PENDING = PendingTransaction(1, "t-eos-1-1", 101, 3, 7)


def txn(tid: str, age_ms: int, pid: int = 101, epoch: int = 3) -> OpenTransaction:
    return OpenTransaction(tid, "Ongoing", pid, epoch, age_ms, 300_000, ("out-1",))


def test_committed_and_young_transactions_need_no_attention():
    decision = Decision(DecisionState.COMMITTED, 4, 2, 12, (0, 1))
    assert attention(decision, [txn("t-eos-0-0", 5_000)], 130_000, "p.yaml") == []


def test_decided_pending_says_when_the_broker_aborts_and_how_to_fix():
    decision = Decision(DecisionState.DECIDED_PENDING, 4, 2, 12, (0,), (PENDING,))
    [line] = attention(decision, [txn("t-eos-1-1", 200_000)], 130_000, "p.yaml")
    assert "batch 4 is decided but not committed" in line and "sink partitions 1 (7 records)" in line
    assert "aborts them in 100 s" in line and "fix: run the pipeline (kafka-eos run p.yaml)" in line


def test_decided_pending_whose_transaction_ended_says_so():
    decision = Decision(DecisionState.DECIDED_PENDING, 4, 2, 12, (0,), (PENDING,))
    [line] = attention(decision, [], 130_000, "p.yaml")
    assert "1 of them are no longer open" in line


def test_lost_partitions_are_rewritten_by_the_next_run():
    decision = Decision(DecisionState.LOST, 4, 2, 12, (0,), (), (1,), 7)
    [line] = attention(decision, [], 130_000, "p.yaml")
    assert "sink partitions 1 (7 records)" in line and "re-writes exactly those partitions" in line


def test_a_transaction_older_than_a_batch_may_take_is_lingering():
    decision = Decision(DecisionState.COMMITTED, 4, 2, 12, (0, 1))
    [line] = attention(decision, [txn("t-eos-0-0", 140_000, pid=7)], 130_000, "p.yaml")
    assert line.startswith("transaction t-eos-0-0 has been open 140 s") and "out-1" in line


def test_report_exit_codes_and_json_document(tmp_path):
    data = valid(tmp_path)
    data["sink"]["kafka"]["properties"] = {"sasl.password": "hunter2-secret"}
    cfg, found = load(tmp_path, data)
    assert cfg is not None, found
    report = status.Report({"pipeline": "t", "file": cfg.origin, "guarantee": "exactly_once",
                            "checkpoint": {"location": "c", "last_planned_batch": 2, "last_committed_batch": 1},
                            "sink_log": {"location": "c/kafka-eos-sink",
                                         **decision_facts(Decision(DecisionState.NONE))}})
    assert report.exit_code == status.HEALTHY
    report.attention.append("something about hunter2-secret")
    assert report.exit_code == status.ATTENTION
    report.unreachable = "sink.kafka: cannot reach Kafka"
    assert report.exit_code == status.UNREACHABLE
    doc = json.loads(status.render(cfg, report, as_json=True))
    assert (doc["format_version"], doc["status"], doc["exit_code"]) == (1, "unreachable", 2)
    text = status.render(cfg, report)
    assert "hunter2-secret" not in text and "attention: something about ***" in text
    assert "last planned batch 2, last committed batch 1" in text and text.endswith("status: broker unreachable")


def test_decided_pending_is_reported_when_transactions_could_not_be_listed():
    decision = Decision(DecisionState.DECIDED_PENDING, 4, 2, 12, (0,), (PENDING,))
    [line] = attention(decision, None, 130_000, "p.yaml")
    assert "batch 4 is decided but not committed" in line and "no longer open" not in line


def test_open_transactions_show_their_owner_and_the_prefix_owner_is_rendered(tmp_path):
    cfg, _ = load(tmp_path, valid(tmp_path))
    row = {"transactional_id": "t-eos-0a1b2c3d-0-1", "age_ms": 4000, "timeout_ms": 300_000, "partitions": ["out-1"],
           "owner": "0a1b2c3d"}
    claim = {"checkpoint": "/cp/a", "query_id": "q1", "owner": "0a1b2c3d", "claimed_at": "2026-01-01T00:00:00+00:00",
             "host": "h1"}
    report = status.Report({"pipeline": "t", "file": cfg.origin, "guarantee": "exactly_once",
                            "checkpoint": {"location": "c", "last_planned_batch": 2, "last_committed_batch": 2},
                            "open_transactions": {"prefix": "t-eos", "transactions": [row]},
                            "prefix_owner": {"topic": "_claims", "this_owner": "0a1b2c3d", "claim": claim}})
    text = status.render(cfg, report)
    assert "open transaction t-eos-0a1b2c3d-0-1: open 4 s of 300 s (transaction.timeout.ms), owner 0a1b2c3d" in text
    assert "prefix owner (_claims): checkpoint /cp/a (query q1, ids owner 0a1b2c3d" in text
    assert "this checkpoint's ids owner: 0a1b2c3d" in text


def test_a_refused_login_needs_attention_with_its_fix_not_unreachable(tmp_path, monkeypatch):
    from kafka_eos.config.live import ClusterProblem
    from kafka_eos.config.violations import Violation

    def refused(cluster, path, timeout_s):
        raise ClusterProblem(Violation(f"{path}.properties", "authentication failed for user 'etl' with SASL "
                                       "mechanism SCRAM-SHA-512", "check sasl.username and sasl.password"))
    monkeypatch.setattr(status, "reachable", refused)
    data = valid(tmp_path)
    data["guarantee"] = "at_least_once"
    cfg, found = load(tmp_path, data)
    assert cfg is not None, found
    report = status.gather(cfg, 1.0)
    assert report.exit_code == status.ATTENTION and report.unreachable is None
    assert report.attention == ["source.kafka: authentication failed for user 'etl' with SASL mechanism "
                                "SCRAM-SHA-512 - fix: check sasl.username and sasl.password"]


def test_a_silent_broker_is_a_warning_not_the_pipelines_health(tmp_path):
    """Issue 44: one broker of several hung is named, and status still says the pipeline's health."""
    cfg, found = load(tmp_path, valid(tmp_path))
    assert cfg is not None, found
    report = status.Report({"pipeline": "t", "file": cfg.origin, "guarantee": "exactly_once",
                            "checkpoint": {"location": "c", "last_planned_batch": None, "last_committed_batch": None}})
    report.warnings.append("sink.kafka: broker b2:9092 accepted no request within 5 s (hung, ...)")
    assert report.exit_code == status.HEALTHY
    text = status.render(cfg, report)
    assert "warning: sink.kafka: broker b2:9092 accepted no request" in text and text.endswith("status: healthy")
    assert json.loads(status.render(cfg, report, as_json=True))["warnings"] == report.warnings


def test_the_last_verify_run_is_shown_and_a_failed_batch_needs_attention():
    from kafka_eos.connectors.operate.status_facts import verify_facts
    from kafka_eos.txn.log.verify_runs import VerifyRun
    assert verify_facts(None, "p.yaml") == (None, [])
    good, none = verify_facts(VerifyRun(1_000, {"verified": [1, 2]}, 2, None), "p.yaml")
    assert good == {"at_ms": 1_000, "newest_verified_batch": 2, "batches": {"verified": 2}, "first_problem": None}
    assert none == []
    _, lines = verify_facts(VerifyRun(2_000, {"verified": [1], "failed": [2]}, 1,
                                      {"batch": 2, "topic": "out", "partition": 3, "offset": 40}), "p.yaml")
    assert len(lines) == 1 and "batch 2 at out[3] offset 40" in lines[0] and "kafka-eos verify p.yaml" in lines[0]


def test_status_names_a_follower_behind_its_bound_and_batches_aged_out():
    from kafka_eos.connectors.operate.status_facts import verify_facts
    from kafka_eos.txn.log.follow_state import FollowLag
    facts, lines = verify_facts(None, "p.yaml", FollowLag(40, 75.0, 3, 11, 1_700_000_000_000))
    assert facts["follow"]["verified_through"] == 11 and facts["follow"]["aged_out"] == 3
    assert "batch 12 was committed 75 s ago" in lines[0] and "#verify-behind" in lines[0]
    assert lines[1].startswith("3 committed batch(es) left the sink log") and "#verify-aged-out" in lines[1]
    assert verify_facts(None, "p.yaml", FollowLag(2, 1.5, 0, 11, 1))[1] == [], "within the bound: nothing to do"
