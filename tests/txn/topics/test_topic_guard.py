"""OutputTopicGuard and the protocol's topic check, with a fake broker answer and a real sink log dir."""
from __future__ import annotations

import json

import pytest

from kafka_eos.txn.protocol.errors import OutputTopicChangedError, OutputTopicCheckError, SinkLogError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.topics.output_topics import OutputTopic
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_log import SinkLog
from kafka_eos.txn.topics.topic_guard import OutputTopicGuard
from kafka_eos.txn.log.topic_log import TopicLog
from tests.txn import fakes
from tests.txn.fakes import FakeCommitter, NoAborter

OUT = OutputTopic("out", "id-a", 3)


class Broker:
    """The broker's answer to DescribeTopics: a table the test changes; counts the calls."""

    def __init__(self, **topics):
        self.topics, self.calls = dict(topics), []

    def __call__(self, names):
        self.calls.append(sorted(names))
        return {n: self.topics.get(n) for n in names}


def guard(tmp_path, broker, topic="out", fixed=False) -> OutputTopicGuard:
    return OutputTopicGuard(TopicLog.at(str(tmp_path)), broker, topic=topic, fixed_partitions=fixed)


def handle(k, topic="out", records=5):
    return fakes.handle(k, records, topic=topic)


def test_first_check_records_the_identity_create_only_and_versioned(tmp_path):
    broker = Broker(out=OUT)
    guard(tmp_path, broker).before_writes()
    guard(tmp_path, broker).before_writes()  # same topic: no second record
    assert sorted(p.name for p in tmp_path.glob("topics.*")) == ["topics.0.json"]
    data = json.loads((tmp_path / "topics.0.json").read_text())
    assert data["v"] == 1 and data["topics"] == {"out": {"topic_id": "id-a", "partitions": 3}}
    assert broker.calls == [["out"], ["out"]]  # one describe per check


def test_deleted_topic_stops_with_its_name_ids_and_fix_and_is_recorded_as_refused(tmp_path):
    broker = Broker(out=OUT)
    guard(tmp_path, broker).before_writes()
    broker.topics["out"] = None
    with pytest.raises(OutputTopicChangedError) as stopped:
        guard(tmp_path, broker).before_writes()
    message = str(stopped.value)
    assert "'out' deleted" in message and "id-a, 3 partitions" in message and "at least 3 partitions" in message
    assert "Fix:" in message
    assert TopicLog.at(str(tmp_path)).latest().refused == {"out": {"change": "deleted", "current": None}}


def test_a_refusal_holds_across_restarts_until_the_operator_accepts(tmp_path):
    """Issue 58: the restart after the stop accepted a re-created topic by itself (a supervisor's
    restart, a second later). Now every restart is refused, records nothing new, until ``accept``."""
    from kafka_eos.txn.topics.output_topics import accept
    broker = Broker(out=OUT)
    guard(tmp_path, broker).before_writes()
    broker.topics["out"] = OutputTopic("out", "id-b", 1)  # auto-created by a producer
    with pytest.raises(OutputTopicChangedError, match="recreated"):
        guard(tmp_path, broker).before_writes()
    records = sorted(p.name for p in tmp_path.glob("topics.*"))
    broker.topics["out"] = OutputTopic("out", "id-c", 3)  # re-created by the user as intended
    for _ in range(10):  # automatic restarts
        with pytest.raises(OutputTopicChangedError, match="not accepted since.*kafka-eos accept-topic"):
            guard(tmp_path, broker).before_writes()
    assert sorted(p.name for p in tmp_path.glob("topics.*")) == records, "held refusals add no record"
    log = TopicLog.at(str(tmp_path))  # what kafka-eos accept-topic records (connectors/operate/accept_topic.py)
    base = log.latest()
    verdict = accept(base.topics, broker(["out"]), held=set(base.refused))
    assert not verdict.refused and "accepted by the operator" in verdict.notes[0]
    log.append(base, verdict.identities, None)
    guard(tmp_path, broker).before_writes()
    latest = TopicLog.at(str(tmp_path)).latest()
    assert latest.topics == {"out": broker.topics["out"]} and latest.refused == {}
    broker.topics["out"] = OutputTopic("out", "id-d", 3)  # changed again after the acceptance: refused again
    with pytest.raises(OutputTopicChangedError):
        guard(tmp_path, broker).before_writes()


def test_topic_column_tracks_the_topics_the_handles_wrote_to(tmp_path):
    broker = Broker(a=OutputTopic("a", "id-a", 2), b=OutputTopic("b", "id-b", 1))
    g = guard(tmp_path, broker, topic=None)
    g.before_writes()
    assert broker.calls == []  # nothing recorded, no topic option: nothing to ask
    g.before_decision(0, [handle(0, "a"), handle(1, "b"), handle(2, "c", records=0)])
    assert set(TopicLog.at(str(tmp_path)).latest().topics) == {"a", "b"}
    broker.topics["b"] = OutputTopic("b", "id-b2", 1)
    with pytest.raises(OutputTopicChangedError, match="'b' recreated"):
        g.before_writes()


def test_an_unanswered_describe_fails_the_check_by_topic(tmp_path):
    def down(names):
        raise TimeoutError("no answer")
    with pytest.raises(OutputTopicCheckError, match=r"\['out'\].*no answer"):
        guard(tmp_path, down).before_writes()


def test_an_unknown_record_version_is_refused(tmp_path):
    (tmp_path / "topics.0.json").write_text(json.dumps({"v": 99, "seq": 0, "topics": {}}))
    with pytest.raises(SinkLogError, match="format 99"):
        guard(tmp_path, Broker(out=OUT)).before_writes()


def test_commit_of_a_batch_written_into_a_recreated_topic_aborts_and_decides_nothing(tmp_path):
    broker = Broker(out=OUT)
    committer = FakeCommitter()
    g = guard(tmp_path / "log", broker)
    protocol = TwoPhaseCommitProtocol(SinkLog(str(tmp_path / "log"), "p"), committer, NoAborter(),
                                      topic_check=g.before_decision)
    g.before_writes()
    protocol.commit_batch(0, [handle(0), handle(1)])
    broker.topics["out"] = OutputTopic("out", "id-b", 1)  # re-created during batch 1
    with pytest.raises(OutputTopicChangedError, match="'out' recreated"):
        protocol.commit_batch(1, [handle(0), handle(1), handle(2, records=0)])
    assert committer.aborted == [0, 1] and committer.committed == [0, 1]  # batch 0's commits only
    assert protocol.log.get(1) is None  # no decision recorded for batch 1


# -- the AdminClient behind describe_topics: held across checks, replaced after a failed attempt --

class FakeAdmin:
    """An AdminClient's describe_topics: answers from ``answers`` (a topic's partition count, or an
    exception to fail the attempt with)."""

    def __init__(self, answers):
        self.answers, self.asked = answers, 0

    def describe_topics(self, topics, request_timeout):
        from concurrent.futures import Future
        from types import SimpleNamespace
        self.asked += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        futures = {}
        for name in topics.topic_names:
            future = Future()
            if isinstance(answer, BaseException):
                future.set_exception(answer)
            else:
                future.set_result(SimpleNamespace(topic_id=f"id-{name}", partitions=[0] * answer))
            futures[name] = future
        return futures


@pytest.fixture
def admins(monkeypatch):
    """The clients describe_topics builds, in order; client k answers from ``plan[k]`` (the last
    entry for later clients)."""
    from kafka_eos.client_factory import HeldClients
    from kafka_eos.txn.topics import topic_guard
    built, plan = [], [[3]]

    def build(conf):
        built.append(FakeAdmin(list(plan[min(len(built), len(plan) - 1)])))
        return built[-1]

    monkeypatch.setattr(topic_guard, "_admins", HeldClients(lambda conf: topic_guard.admin_client(conf)))
    monkeypatch.setattr(topic_guard, "admin_client", build)
    return built, plan


def test_checks_with_the_same_settings_ask_on_one_client(admins):
    from kafka_eos.txn.topics.topic_guard import describe_topics
    built, _ = admins
    for _ in range(4):
        assert describe_topics({"bootstrap.servers": "b:9092"}, ["out"], 5.0) == {"out": OutputTopic("out", "id-out", 3)}
    describe_topics({"bootstrap.servers": "other:9092"}, ["out"], 5.0)
    assert [a.asked for a in built] == [4, 1]


def test_a_failed_attempt_drops_its_client_and_the_retry_asks_on_a_new_one(admins):
    from confluent_kafka import KafkaError, KafkaException
    from kafka_eos.txn.topics.topic_guard import describe_topics
    built, plan = admins
    plan[:] = [[KafkaException(KafkaError(KafkaError._TRANSPORT)), 3], [3]]  # the first client fails once
    assert describe_topics({"bootstrap.servers": "b:9092"}, ["out"], 5.0)["out"].partitions == 3
    assert [a.asked for a in built] == [1, 1]  # the first client failed; the retry's client answered
    describe_topics({"bootstrap.servers": "b:9092"}, ["out"], 5.0)
    assert [a.asked for a in built] == [1, 2]  # the client that answered is kept


def test_a_broker_handle_destroyed_mid_request_is_retried(admins):
    # The stop of stop 51's CI run: the hung coordinator was fenced and left the metadata, so
    # librdkafka decommissioned its broker handle and failed the in-flight DescribeTopics with
    # _DESTROY_BROKER; the check failed on the first attempt and the query stopped.
    from confluent_kafka import KafkaError, KafkaException
    from kafka_eos.txn.topics.topic_guard import describe_topics
    built, plan = admins
    destroyed = KafkaError(KafkaError._DESTROY_BROKER, "Failed while waiting for response from broker: "
                           "Local: Broker handle destroyed without termination")
    plan[:] = [[KafkaException(destroyed)], [3]]
    assert describe_topics({"bootstrap.servers": "b:9092"}, ["out"], 5.0)["out"].partitions == 3
    assert [a.asked for a in built] == [1, 1]


def test_an_unknown_topic_is_none_and_keeps_the_client(admins):
    from confluent_kafka import KafkaError, KafkaException
    from kafka_eos.txn.topics.topic_guard import describe_topics
    built, plan = admins
    plan[0] = [KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))]
    assert describe_topics({"bootstrap.servers": "b:9092"}, ["gone"], 5.0) == {"gone": None}
    describe_topics({"bootstrap.servers": "b:9092"}, ["gone"], 5.0)
    assert [a.asked for a in built] == [2]
