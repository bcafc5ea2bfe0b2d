"""The states a person must decide, refused before a run starts Spark (``held_states``): a standing
stop request and an output-topic refusal not accepted, read from a real checkpoint folder."""
from __future__ import annotations

import pytest

from kafka_eos.connectors.operate.accept_topic import accept_topics
from kafka_eos.connectors.pipeline.held_states import check_held
from kafka_eos.connectors.pipeline.spark_options import sink_options
from kafka_eos.connectors.pipeline.stop import StopRequested, request_stop, withdraw_stop
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.txn.protocol.errors import OutputTopicChangedError
from kafka_eos.txn.topics.output_topics import OutputTopic
from kafka_eos.txn.topics.topic_guard import OutputTopicGuard
from kafka_eos.txn.log.topic_log import TopicLog
from tests.factories import loaded

OUT = OutputTopic("out", "id-a", 3)


def test_a_fresh_checkpoint_holds_nothing(tmp_path):
    check_held(loaded(tmp_path))
    assert not (tmp_path / "ckpt").exists(), "the check creates nothing"


def test_a_stop_request_holds_every_start_until_resume(tmp_path):
    cfg = loaded(tmp_path)
    request_stop(str(cfg.checkpoint.location))
    for _ in range(3):
        with pytest.raises(StopRequested, match="kafka-eos resume"):
            check_held(cfg)
    withdraw_stop(str(cfg.checkpoint.location))
    check_held(cfg)


def test_an_output_topic_refusal_holds_every_start_until_accept_topic(tmp_path):
    cfg = loaded(tmp_path)
    config = sink_config(sink_options(cfg))
    broker = {"out": OUT}
    guard = OutputTopicGuard(TopicLog.at(config.log_location), lambda names: {n: broker.get(n) for n in names},
                             topic="out")
    guard.before_writes()
    check_held(cfg)
    broker["out"] = OutputTopic("out", "id-b", 3)
    with pytest.raises(OutputTopicChangedError):
        guard.before_writes()  # the query's start: refused, recorded
    for _ in range(10):  # automatic restarts: refused before Spark, from the record alone
        with pytest.raises(OutputTopicChangedError, match="'out' refused at an earlier start.*accept-topic"):
            check_held(cfg)
    assert accept_topics(config, lambda names: {n: broker.get(n) for n in names}).exit_code == 0
    check_held(cfg)
