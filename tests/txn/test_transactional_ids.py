"""Transactional ids per task attempt, the writer's guard against stale attempts, multi-point fault plans."""
from __future__ import annotations

import pytest

from kafka_eos.txn.errors import SinkConfigError
from kafka_eos.txn.transactional_ids import ATTEMPT_IDS, TransactionalIdFactory


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


# -- the writer's guard against stale attempts (pure logic: no producer is built) -----------------
import pyarrow as pa  # noqa: E402

from kafka_eos.txn.faults import FaultPlan, paused  # noqa: E402
from kafka_eos.txn.decision_guard import DecisionGuard  # noqa: E402
from kafka_eos.txn.kafka_writer import KafkaWriter, StaleAttemptError  # noqa: E402
from kafka_eos.txn.sink_config import SinkConfig  # noqa: E402
from kafka_eos.txn.sink_log import DECIDED, BatchRecord, SinkLog  # noqa: E402


def _config(tmp_path) -> SinkConfig:
    return SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                      log_location=str(tmp_path / "log"), topic="t")


def _decide(tmp_path, batch_id: int) -> None:
    log = SinkLog(str(tmp_path / "log"), "p")
    log.append(BatchRecord(batch_id, DECIDED, 1, ()), log.get(batch_id))


def test_the_writer_uses_the_attempts_id(tmp_path):
    assert KafkaWriter(_config(tmp_path), 3, 2, attempt=1).transactional_id == "p-2-3"


def test_the_guard_sees_only_decisions_newer_than_the_plan(tmp_path):
    location = str(tmp_path / "log")
    assert not DecisionGuard(location, None)()            # empty log, nothing planned after
    _decide(tmp_path, 0)
    assert DecisionGuard(location, None)()                # batch 0 decided after batch 0 was planned
    assert not DecisionGuard(location, 0)()               # batch 1 planned after batch 0: still open
    _decide(tmp_path, 0)
    assert not DecisionGuard(location, 0)()               # a replay of batch 0 is not newer
    _decide(tmp_path, 2)
    assert DecisionGuard(location, 0)()


def test_a_stale_attempt_writes_nothing(tmp_path):
    writer = KafkaWriter(_config(tmp_path), 1, 0, decided=lambda: True)
    rows = pa.record_batch({"value": ["a", "b"]})
    with pytest.raises(StaleAttemptError, match="batch 1 was decided without this task attempt"):
        writer.write([rows])                              # raised before any producer exists
    assert writer._producer is None


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


# -- producer defaults next to the ids: the partitioner of Java clients --------------------------
def test_the_producer_partitions_keys_like_java_clients_unless_the_user_says_otherwise(tmp_path):
    assert _config(tmp_path).producer_settings("p-0-0")["partitioner"] == "murmur2_random"
    mine = SinkConfig(producer_conf={"bootstrap.servers": "unused:1", "partitioner": "consistent_random"},
                      transactional_id_prefix="p", log_location=str(tmp_path / "log"), topic="t")
    assert mine.producer_settings("p-0-0")["partitioner"] == "consistent_random"


def test_speculation_is_refused_with_the_setting_named():
    from kafka_eos.connectors.sink.startup_checks import check_speculation
    check_speculation(None)
    check_speculation("false")
    with pytest.raises(SinkConfigError, match="spark.speculation=false"):
        check_speculation("true")


def test_the_producer_connects_to_every_broker_at_once_unless_the_user_says_otherwise(tmp_path):
    # sparse connections made init_transactions wait for librdkafka's 500 ms coordinator timer
    assert _config(tmp_path).producer_settings("p-0-0")["enable.sparse.connections"] == "false"
    mine = SinkConfig(producer_conf={"bootstrap.servers": "unused:1", "enable.sparse.connections": "true"},
                      transactional_id_prefix="p", log_location=str(tmp_path / "log"), topic="t")
    assert mine.producer_settings("p-0-0")["enable.sparse.connections"] == "true"


# -- owners: two pipelines given one prefix never share an id --------------------------------------
from kafka_eos.txn.transactional_ids import owner_of  # noqa: E402


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


@pytest.mark.parametrize("timeout_ms", [10_000, 12_000, 900_000])
def test_librdkafka_accepts_the_producer_settings_of_a_short_transaction_timeout(tmp_path, timeout_ms):
    # librdkafka refuses socket.timeout.ms > transaction.timeout.ms + 100 when it builds the producer
    from confluent_kafka import Producer
    config = SinkConfig(producer_conf={"bootstrap.servers": "unused:1"}, transactional_id_prefix="p",
                        log_location=str(tmp_path / "log"), topic="t", transaction_timeout_ms=timeout_ms)
    settings = config.producer_settings("p-0-0")
    assert int(settings["socket.timeout.ms"]) <= timeout_ms
    Producer(settings)  # raises KafkaException(_INVALID_ARG) for a setting librdkafka refuses



def test_id_pool_is_bounded_whatever_the_number_of_batches():
    ids = TransactionalIdFactory("orders", slots=2)
    used = {ids.id_for(k, batch) for k in range(4) for batch in range(1000)}
    assert len(used) == 8
    assert ids.id_for(3, 10) != ids.id_for(3, 11)  # consecutive batches never share an id
    assert ids.owns("orders-3-1") and not ids.owns("orders-x-3-1") and not ids.owns("orders2-3-1")


def test_invalid_prefix_is_refused():
    with pytest.raises(SinkConfigError, match="transactional.id.prefix"):
        TransactionalIdFactory("has space")
