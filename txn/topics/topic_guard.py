"""The output-topic check of the sink: before a batch's writes and before its decision.

``OutputTopicGuard`` asks the broker for the output topics' identities (one DescribeTopics per
check, never per record), judges them against the sink log's record (``output_topics.judge``)
and enforces:
- a refused change (deleted, re-created, shrank; grew with ``fixed_partitions``) is recorded as
  refused, create-only, then raised as ``OutputTopicChangedError`` naming the topic, the ids and
  partition counts and the fix: before the writes, no task of the batch starts; before the
  decision, the protocol aborts the batch's transactions (nothing written into a topic that was
  re-created during the batch is committed);
- a recorded refusal holds at every later check until an operator accepts it
  (``output_topics.judge``; ``kafka-eos accept-topic``); a check that finds only held refusals
  records nothing new, so restarts in a loop add no record;
- an accepted change (grew) is logged on one WARNING line and recorded, as is a topic seen for
  the first time;
- the topics checked: the ``topic`` option's, every recorded or refused one, and before a
  decision every topic the batch's handles wrote to (a ``topic`` column);
- a broker that does not answer within ``timeout_s`` (transient errors are retried,
  ``kafka_clients.TIMEOUTS["sink.describe_output_topics"]``) fails the check with
  ``OutputTopicCheckError``; nothing is decided on a guess;
- one AdminClient per connection settings per process answers the checks (a new client cost
  5-25 ms a check, twice a batch); an attempt that fails drops it, so every retry asks on a new
  client (fresh metadata, no connection to a broker that hung).
"""
from __future__ import annotations

import logging
from typing import Callable, Collection, Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kafka_eos.client_factory import HeldClients
from kafka_eos.kafka_clients import is_transient, request_s
from kafka_eos.txn.cluster.broker_configs import admin_client
from kafka_eos.txn.protocol.errors import OutputTopicChangedError, OutputTopicCheckError
from kafka_eos.txn.protocol.handle import TxnHandle
from kafka_eos.txn.topics.output_topics import OutputTopic, judge
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.topic_log import TopicLog

log = logging.getLogger(__name__)
Describe = Callable[[Collection[str]], Mapping[str, OutputTopic | None]]
_UNKNOWN = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC}


def _code(exc: BaseException) -> int | None:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def describe_topics(conf: Mapping[str, str], names: Collection[str], timeout_s: float
                    ) -> dict[str, OutputTopic | None]:
    """The identity of each topic (None: the broker does not know it), in one DescribeTopics."""
    if not names:
        return {}
    per_request = request_s("sink.describe_output_topics")
    for attempt in Retrying(retry=retry_if_exception(is_transient), stop=stop_after_delay(timeout_s),
                            wait=wait_exponential(0.1, max=1.0), reraise=True):
        with attempt:
            admin = _admins.get(conf)
            try:
                return _describe(admin, sorted(names), per_request)
            except BaseException:  # held by us until its futures are answered (a dropped client fails them)
                _admins.drop(conf, admin)  # the retry asks on a new client
                raise
    raise AssertionError("unreachable: Retrying re-raises the last failure")


def _describe(admin: AdminClient, names: list[str], per_request: float) -> dict[str, OutputTopic | None]:
    found: dict[str, OutputTopic | None] = {}
    futures = admin.describe_topics(TopicCollection(names), request_timeout=per_request)
    for name, future in futures.items():
        try:
            description = future.result(per_request)
        except KafkaException as exc:
            if _code(exc) not in _UNKNOWN:
                raise
            found[name] = None
            continue
        found[name] = OutputTopic(name, str(description.topic_id), len(description.partitions))
    return found


_admins: HeldClients[AdminClient] = HeldClients(lambda conf: admin_client(conf))  # admin_client read at each build


class OutputTopicGuard:
    def __init__(self, topic_log: TopicLog, describe: Describe, *, topic: str | None = None,
                 fixed_partitions: bool = False) -> None:
        self.log, self.describe = topic_log, describe
        self.topic, self.fixed_partitions = topic, fixed_partitions

    @classmethod
    def from_config(cls, config: SinkConfig) -> "OutputTopicGuard":
        conf = config.client_conf()
        timeout_s = config.commit_timeout_s
        return cls(TopicLog.at(config.log_location), lambda names: describe_topics(conf, names, timeout_s),
                   topic=config.topic, fixed_partitions=config.fixed_partitions)

    def before_writes(self) -> None:
        """The check before a batch's tasks start (the sink's query start, for the tasks' writer)."""
        self._check(None, ())

    def before_decision(self, batch_id: int, handles: Iterable[TxnHandle]) -> None:
        """The check before batch ``batch_id``'s decision is recorded."""
        written = {topic for h in handles if h.has_transaction for topic in h.partitions}
        self._check(batch_id, written)

    def _check(self, batch_id: int | None, written: Collection[str]) -> None:
        base = self.log.latest()
        names = set(base.topics) | set(base.refused) | set(written) | ({self.topic} if self.topic else set())
        if not names:
            return
        try:
            current = self.describe(names)
        except (KafkaException, TimeoutError) as exc:
            raise OutputTopicCheckError.of_topics(sorted(names), str(exc) or "no answer in time") from None
        verdict = judge(base.topics, current, fixed_partitions=self.fixed_partitions,
                        refused_before=set(base.refused), written=written)
        if verdict.refused:
            if any(not change.held for change in verdict.refused):
                self.log.append(base, base.topics, batch_id, verdict.refused)
            raise OutputTopicChangedError.of_changes(verdict.refused, self.fixed_partitions)
        for note in verdict.notes:
            log.warning("kafka-eos: %s", note)
        if verdict.changed or base.refused:
            self.log.append(base, verdict.identities, batch_id)
