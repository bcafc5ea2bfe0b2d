"""Which ACLs a pipeline's principal lacks, asked of the broker without DescribeAcls permission.

- Topics, the cluster and consumer groups: the broker's answer to DescribeTopics / DescribeCluster /
  DescribeConsumerGroups with ``include_authorized_operations`` (KIP-430) lists the operations
  the CALLER may perform; a resource it may not Describe answers *_AUTHORIZATION_FAILED.
- A transactional-id prefix has no describe: a producer with ``transactional.id``
  ``<prefix>-validate-probe`` calls ``init_transactions`` (it writes no records; the broker keeps
  the probe's id until ``transactional.id.expiration.ms``). TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  means Write on the prefix is missing, CLUSTER_AUTHORIZATION_FAILED means IdempotentWrite is.
- IdempotentWrite on the cluster is reported as missing when DescribeCluster does not list it,
  as the kafka-eos grant recommends it (brokers since 3.0 also accept a transactional producer
  with Write on its transactional id alone, KIP-679).
Any other failure (unreachable broker, timeouts) is not an ACL answer: it is left to the callers'
own reachability checks, and nothing is reported here.
"""
from __future__ import annotations

import logging
from typing import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient

from kafka_eos.offsets.acl_advice import AclMissingError, MissingAcl, principal_of

log = logging.getLogger(__name__)
PROBE_SUFFIX = "-validate-probe"
_DENIED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
           KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def _code(exc: BaseException) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].code()
    return None


def _allows(ops: Iterable[AclOperation] | None, op: AclOperation) -> bool:
    return ops is None or op in ops or AclOperation.ALL in ops


def _admin(conf: Mapping[str, str]) -> AdminClient:
    return AdminClient({**conf, "log_level": 3})


def topics_missing(conf: Mapping[str, str], topics: Iterable[str], operation: str, timeout_s: float) -> list[MissingAcl]:
    """``operation`` (Read or Write) on each of ``topics`` the principal lacks."""
    names = sorted(set(topics))
    if not names:
        return []
    op, principal, out = AclOperation[operation.upper()], principal_of(conf), []
    futures = _admin(conf).describe_topics(TopicCollection(names), request_timeout=timeout_s,
                                           include_authorized_operations=True)
    for name, future in futures.items():
        try:
            ops = future.result(timeout_s + 1).authorized_operations
        except KafkaException as exc:
            if _code(exc) == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                out.append(MissingAcl(principal, "topic", name, operation))
            continue
        if not _allows(ops, op):
            out.append(MissingAcl(principal, "topic", name, operation))
    return out


def group_missing(conf: Mapping[str, str], group: str, timeout_s: float) -> list[MissingAcl]:
    """Read on consumer group ``group`` if the principal lacks it."""
    future = _admin(conf).describe_consumer_groups([group], request_timeout=timeout_s,
                                                   include_authorized_operations=True)[group]
    try:
        ops = future.result(timeout_s + 1).authorized_operations
    except Exception as exc:  # noqa: BLE001 - only an authorization answer is reported
        ops = [] if _code(exc) == KafkaError.GROUP_AUTHORIZATION_FAILED else None
        log.debug("describing group %s: %r", group, exc)
    return [] if _allows(ops, AclOperation.READ) else [MissingAcl(principal_of(conf), "group", group, "Read")]


def cluster_missing(conf: Mapping[str, str], timeout_s: float) -> list[MissingAcl]:
    """IdempotentWrite on the cluster if the principal lacks it."""
    try:
        ops = _admin(conf).describe_cluster(request_timeout=timeout_s,
                                            include_authorized_operations=True).result(timeout_s + 1).authorized_operations
    except KafkaException as exc:
        ops = [] if _code(exc) == KafkaError.CLUSTER_AUTHORIZATION_FAILED else None
    if _allows(ops, AclOperation.IDEMPOTENT_WRITE):
        return []
    return [MissingAcl(principal_of(conf), "cluster", "kafka-cluster", "IdempotentWrite")]


def transactional_id_missing(conf: Mapping[str, str], prefix: str, timeout_s: float) -> list[MissingAcl]:
    """Write on the transactional-id prefix (and IdempotentWrite) as a real init_transactions answers."""
    producer = Producer({**conf, "transactional.id": f"{prefix}{PROBE_SUFFIX}", "log_level": 3})
    try:
        producer.init_transactions(timeout_s)
    except Exception as exc:  # noqa: BLE001 - only an authorization answer is reported
        code, principal = _code(exc), principal_of(conf)
        if code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return [MissingAcl(principal, "transactional-id", prefix, "Write", prefixed=True)]
        if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            return [MissingAcl(principal, "cluster", "kafka-cluster", "IdempotentWrite")]
        log.debug("transactional-id probe of %s did not answer: %s", prefix, exc)
    return []


def sink_missing(conf: Mapping[str, str], topics: Iterable[str], prefix: str, timeout_s: float) -> list[MissingAcl]:
    """Every ACL the exactly-once sink needs and its principal lacks (cluster first, as the
    producer needs it before anything else)."""
    found = cluster_missing(conf, timeout_s) + topics_missing(conf, topics, "Write", timeout_s)
    return found + [m for m in transactional_id_missing(conf, prefix, timeout_s) if m not in found]


def check_sink(conf: Mapping[str, str], topics: Iterable[str], prefix: str, timeout_s: float) -> None:
    """Raise ``AclMissingError`` naming every missing ACL of the sink."""
    missing = sink_missing(conf, topics, prefix, timeout_s)
    if missing:
        raise AclMissingError(missing, conf.get("bootstrap.servers", ""), "the kafka-eos sink cannot start")
