"""Which ACLs a pipeline's principal lacks, asked of the broker without DescribeAcls permission.

- Topics and consumer groups: DescribeTopics / DescribeConsumerGroups with
  ``include_authorized_operations`` (KIP-430) list the operations the CALLER may perform; a
  resource it may not even Describe answers TOPIC_/GROUP_AUTHORIZATION_FAILED. Both count as an
  answer; a broker that lists no operations (None) has not answered, and nothing is reported.
- A transactional-id prefix has no describe: a producer with ``transactional.id``
  ``<prefix>-validate-probe`` calls ``init_transactions`` (it writes no records; the broker keeps
  the probe's id until ``transactional.id.expiration.ms``). TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  means Write on the prefix is missing, CLUSTER_AUTHORIZATION_FAILED means IdempotentWrite is.
  IdempotentWrite is reported from that answer only: since Kafka 3.0 (KIP-679) a transactional
  producer with Write on its transactional id needs no cluster ACL, and DescribeCluster's
  authorized operations are empty for a principal without Describe on the cluster.
Any other failure (unreachable broker, timeouts) is not an ACL answer: it is left to the callers'
own reachability checks, and nothing is reported here.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Iterable, Mapping, Sequence, Union

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AclOperation

from kafka_eos import client_factory
from kafka_eos.client_factory import AdminFactory, Noise, ProducerFactory
from kafka_eos.offsets.acl_advice import AclMissingError, MissingAcl, principal_of

log = logging.getLogger(__name__)
PROBE_SUFFIX = "-validate-probe"
# the resource's authorized operations (a list, or None) or the exception it raised
Answer = Union[Sequence[AclOperation], BaseException, None]


def error_code(exc: BaseException) -> int | None:
    """The Kafka error code an admin future or a producer call raised, if any."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].code()
    return None


def _refusal(answer: Answer, operation: AclOperation, denied_code: int) -> str | None:
    """How the broker's answer refuses ``operation`` (None: it does not, or did not say)."""
    if isinstance(answer, BaseException):
        return KafkaError(denied_code).name() if error_code(answer) == denied_code else None
    if answer is None or operation in answer or AclOperation.ALL in answer:
        return None
    return f"only {', '.join(op.name for op in answer)} allowed" if answer else "no operation allowed"


def topic_answer(principal: str, topic: str, operation: str, answer: Answer) -> MissingAcl | None:
    """``operation`` (Read or Write) on ``topic`` if the broker's DescribeTopics answer refuses it."""
    refusal = _refusal(answer, AclOperation[operation.upper()], KafkaError.TOPIC_AUTHORIZATION_FAILED)
    return MissingAcl(principal, "topic", topic, operation, answer=refusal) if refusal else None


def group_answer(principal: str, group: str, answer: Answer) -> MissingAcl | None:
    """Read on ``group`` if the broker's DescribeConsumerGroups answer refuses it."""
    refusal = _refusal(answer, AclOperation.READ, KafkaError.GROUP_AUTHORIZATION_FAILED)
    return MissingAcl(principal, "group", group, "Read", answer=refusal) if refusal else None


def probe_answer(principal: str, prefix: str, exc: BaseException | None) -> MissingAcl | None:
    """What a refused ``init_transactions`` of the prefix's probe says is missing (None: nothing known)."""
    code = error_code(exc) if exc is not None else None
    if code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return MissingAcl(principal, "transactional-id", prefix, "Write", prefixed=True, answer=KafkaError(code).name())
    if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
        return MissingAcl(principal, "cluster", "kafka-cluster", "IdempotentWrite", answer=KafkaError(code).name())
    return None


def _results(futures: Mapping[str, Future], timeout_s: float) -> dict[str, Answer]:
    out: dict[str, Answer] = {}
    for name, future in futures.items():
        try:
            out[name] = future.result(timeout_s + 1).authorized_operations
        except Exception as exc:  # noqa: BLE001 - judged by topic_answer / group_answer
            log.debug("describing %s: %r", name, exc)
            out[name] = exc
    return out


# librdkafka errors only: what these clients find is reported by the checks themselves
CHECK_ADMIN: AdminFactory = client_factory.quiet(client_factory.admin, Noise.ERRORS)
# the probe's fatal error is its expected answer: librdkafka's lines at debug
PROBE_PRODUCER: ProducerFactory = client_factory.quiet(client_factory.producer, Noise.DEBUG)


def topics_missing(conf: Mapping[str, str], topics: Iterable[str], operation: str, timeout_s: float,
                   new_admin: AdminFactory = CHECK_ADMIN) -> list[MissingAcl]:
    """``operation`` (Read or Write) on each of ``topics`` the principal lacks."""
    names = sorted(set(topics))
    if not names:
        return []
    admin = new_admin(conf)  # referenced until its futures are done: a collected client fails them (_DESTROY)
    answers = _results(admin.describe_topics(TopicCollection(names), request_timeout=timeout_s,
                                             include_authorized_operations=True), timeout_s)
    found = (topic_answer(principal_of(conf), name, operation, answers[name]) for name in names)
    return [m for m in found if m]


def group_missing(conf: Mapping[str, str], group: str, timeout_s: float,
                  new_admin: AdminFactory = CHECK_ADMIN) -> list[MissingAcl]:
    """Read on consumer group ``group`` if the principal lacks it."""
    admin = new_admin(conf)  # referenced until its futures are done
    answers = _results(admin.describe_consumer_groups([group], request_timeout=timeout_s,
                                                      include_authorized_operations=True), timeout_s)
    found = group_answer(principal_of(conf), group, answers[group])
    return [found] if found else []


def transactional_id_missing(conf: Mapping[str, str], prefix: str, timeout_s: float,
                             new_producer: ProducerFactory = PROBE_PRODUCER) -> list[MissingAcl]:
    """Write on the transactional-id prefix (or IdempotentWrite) as a real ``init_transactions`` answers."""
    producer = new_producer({**conf, "transactional.id": f"{prefix}{PROBE_SUFFIX}"})
    try:
        producer.init_transactions(timeout_s)
    except Exception as exc:  # noqa: BLE001 - only an authorization answer is reported
        log.debug("transactional-id probe of %s: %s", prefix, exc)
        found = probe_answer(principal_of(conf), prefix, exc)
        return [found] if found else []
    return []


def sink_missing(conf: Mapping[str, str], topics: Iterable[str], prefix: str, timeout_s: float) -> list[MissingAcl]:
    """Every ACL the exactly-once sink needs and its principal lacks."""
    return topics_missing(conf, topics, "Write", timeout_s) + transactional_id_missing(conf, prefix, timeout_s)


def check_sink(conf: Mapping[str, str], topics: Iterable[str], prefix: str, timeout_s: float) -> None:
    """Raise ``AclMissingError`` naming every missing ACL of the sink."""
    missing = sink_missing(conf, topics, prefix, timeout_s)
    if missing:
        raise AclMissingError(missing, conf.get("bootstrap.servers", ""), "the kafka-eos sink cannot start")
