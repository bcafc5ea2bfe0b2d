"""``kafka-eos accept-topic``: the operator's acceptance of a refused output topic, over a real
topic log in a folder and a stand-in for the brokers' DescribeTopics answer."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.operate.accept_topic import accept_sink_topics
from kafka_eos.txn.protocol.errors import OutputTopicChangedError
from kafka_eos.txn.topics.output_topics import OutputTopic
from kafka_eos.txn.topics.topic_guard import OutputTopicGuard
from kafka_eos.txn.log.topic_log import TopicLog

OUT = OutputTopic("out", "id-a", 3)


class Broker:
    def __init__(self, **topics):
        self.topics = dict(topics)

    def __call__(self, names):
        return {n: self.topics.get(n) for n in names}


def options(tmp_path, fixed: bool = False) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "out", "transactional.id.prefix": "p",
            "checkpointLocation": str(tmp_path), "fixedPartitions": str(fixed).lower()}


def refused(tmp_path, broker, now: OutputTopic | None) -> TopicLog:
    """The guard recorded OUT, then refused ``now`` (what the query's start did)."""
    log = TopicLog.at(str(tmp_path / "kafka-eos-sink"))
    guard = OutputTopicGuard(log, broker, topic="out")
    guard.before_writes()
    broker.topics["out"] = now
    with pytest.raises(OutputTopicChangedError):
        guard.before_writes()
    return log


def test_a_recreated_topic_is_accepted_once_and_the_next_start_writes_to_it(tmp_path):
    broker = Broker(out=OUT)
    log = refused(tmp_path, broker, OutputTopic("out", "id-b", 3))
    done = accept_sink_topics(options(tmp_path), broker)
    assert done.exit_code == 0, done.lines
    assert "'out' refused at an earlier start" in done.lines[0] and "accepted by the operator" in done.lines[0]
    assert log.latest().refused == {} and log.latest().topics["out"].topic_id == "id-b"
    OutputTopicGuard(log, broker, topic="out").before_writes()  # the next start
    again = accept_sink_topics(options(tmp_path), broker)
    assert again.exit_code == 0 and "nothing to accept" in again.lines[0]


@pytest.mark.parametrize("now, fixed, fix", [
    (None, False, "create it"),
    (OutputTopic("out", "id-b", 1), False, "at least 3 partitions"),
    (OutputTopic("out", "id-a", 4), True, "set it to false"),
])
def test_what_cannot_be_accepted_is_refused_and_nothing_recorded(tmp_path, now, fix, fixed):
    broker = Broker(out=OUT)
    log = TopicLog.at(str(tmp_path / "kafka-eos-sink"))
    guard = OutputTopicGuard(log, broker, topic="out", fixed_partitions=fixed)
    guard.before_writes()
    broker.topics["out"] = now
    with pytest.raises(OutputTopicChangedError):
        guard.before_writes()
    before = log.latest()
    done = accept_sink_topics(options(tmp_path, fixed), broker)
    assert done.exit_code == 1 and fix in done.lines[0] and done.lines[-1] == "nothing was accepted", done.lines
    assert log.latest() == before


def test_brokers_that_do_not_answer_exit_2_and_record_nothing(tmp_path):
    broker = Broker(out=OUT)
    log = refused(tmp_path, broker, OutputTopic("out", "id-b", 3))
    before = log.latest()

    def down(names):
        raise TimeoutError("no answer in time")
    done = accept_sink_topics(options(tmp_path), down)
    assert done.exit_code == 2 and "no answer in time" in done.lines[0] and log.latest() == before
