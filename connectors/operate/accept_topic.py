"""``kafka-eos accept-topic``: the operator's acceptance of a changed output topic.

A refused output-topic change (``OutputTopicChangedError``: deleted, re-created, shrank, grew
under ``fixed_partitions``) holds at every start of the query until this runs
(``txn.output_topics``). It asks the brokers for the output topics once (the topic guard's
``describe_topics``) and enforces:
- what is accepted is ``output_topics.accept``'s verdict: a topic the brokers have with at least
  the recorded partition count (exactly that count with ``fixed_partitions``); the record then
  names the identity the brokers showed now, so a topic changed again afterwards is refused again;
- all or nothing: while one topic cannot be accepted (no such topic, fewer partitions), nothing is
  recorded, and the answer says what to fix (exit 1);
- the acceptance is one create-only record of the sink log's topic log (``TopicLog.append``),
  written only when there is something to accept; nothing else is touched.
Code users call ``accept_sink_topics`` with the options of their ``writeStream``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Mapping

from kafka_eos.connectors.exit_codes import DONE, INVALID, UNREACHABLE
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.txn.topics.output_topics import Change, OutputTopic, TopicChange, accept
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.topic_log import TopicLog

Describe = Callable[[Collection[str]], Mapping[str, OutputTopic | None]]


@dataclass
class Accepted:
    lines: list[str] = field(default_factory=list)
    exit_code: int = DONE.code


def _fix(change: TopicChange, fixed_partitions: bool) -> str:
    if change.current is None:
        return "create it (kafka-topics --create), then accept it"
    recorded = change.recorded.partitions if change.recorded else 0
    if change.change is Change.GREW and fixed_partitions:
        return ("sink.fixed_partitions is true, so only the recorded layout is accepted: set it to false to accept "
                "the new layout (keys then hash to other partitions), or re-create the topic with "
                f"{recorded} partitions")
    need = "exactly" if fixed_partitions else "at least"
    return f"re-create it with {need} {recorded} partitions (delete it first), then accept it"


def accept_topics(config: SinkConfig, describe: Describe | None = None) -> Accepted:
    """Accept the sink's changed or refused output topics (see the module)."""
    from kafka_eos.txn.topics.topic_guard import describe_topics
    topic_log = TopicLog.at(config.log_location)
    base = topic_log.latest()
    names = set(base.topics) | set(base.refused) | ({config.topic} if config.topic else set())
    if not names:
        return Accepted([f"no output topic is recorded in {config.log_location}: nothing to accept"])
    ask = describe or (lambda topics: describe_topics(config.client_conf(), topics, config.commit_timeout_s))
    try:
        current = ask(names)
    except Exception as exc:  # noqa: BLE001 - KafkaException, TimeoutError: the brokers did not answer
        return Accepted([f"could not describe the output topics {sorted(names)}: {exc}; nothing was accepted"],
                        UNREACHABLE.code)
    verdict = accept(base.topics, current, fixed_partitions=config.fixed_partitions, held=set(base.refused))
    if verdict.refused:
        return Accepted([f"{c.describe()}: not accepted; {_fix(c, config.fixed_partitions)}" for c in verdict.refused]
                        + ["nothing was accepted"], INVALID.code)
    if not verdict.changed:
        return Accepted(["every output topic is the one recorded and none is refused: nothing to accept"])
    topic_log.append(base, verdict.identities, None)
    return Accepted(verdict.notes + [f"recorded in {config.log_location}; the next start of the query writes to "
                                     "the accepted topic(s)"])


def accept_sink_topics(options: Mapping[str, str], describe: Describe | None = None) -> Accepted:
    """``accept_topics`` for the options of a ``writeStream.format("kafka-eos")`` (code users)."""
    return accept_topics(sink_config(options), describe)
