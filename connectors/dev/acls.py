"""Admin-API operations on the local secured broker: add SCRAM users, grant a pipeline's ACLs.

``grant_pipeline`` gives a user exactly what a kafka-eos pipeline needs: Read/Describe on its
input topics and consumer groups (the source's ``spark-kafka-source`` prefix unless named),
Write/Describe on its output topics, Write/Describe on its transactional-id prefix, and
IdempotentWrite and DescribeConfigs on the cluster (the sink and ``kafka-eos validate`` read the
broker's ``transaction.max.timeout.ms``), and Create/Read/Write/Describe on the prefix-claim topic
(``_kafka_eos_prefix_claims``, created by the first pipeline that starts). Topics are created by the
admin, not by the pipeline's user.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)

from kafka_eos import client_factory
from kafka_eos.client_factory import Noise
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError
from kafka_eos.txn.topics.prefix_claim import DEFAULT_CLAIM_TOPIC
from kafka_eos.txn.log.kafka_store import store_topic

SOURCE_GROUP_PREFIX = "spark-kafka-source"
TIMEOUT_S = 30


def _admin(admin_conf: Mapping[str, str]) -> AdminClient:
    return client_factory.admin(admin_conf, Noise.ERRORS)


def add_user(admin_conf: Mapping[str, str], user: str, password: str, iterations: int = 8192) -> None:
    """Create (or reset) ``user``'s SCRAM-SHA-512 credential through the Admin API."""
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations),
                                          password.encode())
    admin = _admin(admin_conf)  # kept referenced until the futures are done
    for name, future in admin.alter_user_scram_credentials([upsert]).items():
        try:
            future.result(TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - named with the user, never with the password
            raise BrokerEnvironmentError(f"adding SCRAM user {name!r} failed: {exc}") from None


def _binding(user: str, kind: ResourceType, name: str, operation: AclOperation,
             pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(kind, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW)


def pipeline_acls(user: str, inputs: Iterable[str], outputs: Iterable[str], transactional_id_prefix: str,
                  groups: Iterable[str] = ()) -> list[AclBinding]:
    """The ACL bindings a pipeline running as ``user`` needs."""
    read, write, describe = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE
    prefixed = ResourcePatternType.PREFIXED
    out = [_binding(user, ResourceType.TOPIC, t, op) for t in inputs for op in (read, describe)]
    out += [_binding(user, ResourceType.TOPIC, t, op) for t in outputs for op in (write, describe)]
    out += [_binding(user, ResourceType.GROUP, SOURCE_GROUP_PREFIX, op, prefixed) for op in (read, describe)]
    out += [_binding(user, ResourceType.GROUP, g, op) for g in groups for op in (read, describe)]
    out += [_binding(user, ResourceType.TRANSACTIONAL_ID, transactional_id_prefix, op, prefixed)
            for op in (write, describe)]
    out += [_binding(user, ResourceType.TOPIC, DEFAULT_CLAIM_TOPIC, op)  # the prefix claims (txn/topics/claim_topic.py)
            for op in (AclOperation.CREATE, read, write, describe)]
    out += [_binding(user, ResourceType.TOPIC, store_topic(transactional_id_prefix), op)  # checkpoint.records: kafka
            for op in (AclOperation.CREATE, read, write, describe)]
    out += [_binding(user, ResourceType.BROKER, "kafka-cluster", op)
            for op in (AclOperation.IDEMPOTENT_WRITE, AclOperation.DESCRIBE_CONFIGS)]
    return list(dict.fromkeys(out))  # a topic both read and written is described once


def grant(admin_conf: Mapping[str, str], bindings: list[AclBinding]) -> None:
    admin = _admin(admin_conf)  # kept referenced until the futures are done
    for binding, future in admin.create_acls(bindings).items():
        try:
            future.result(TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001
            raise BrokerEnvironmentError(f"creating ACL {binding} failed: {exc}") from None


def grant_pipeline(admin_conf: Mapping[str, str], user: str, inputs: Iterable[str], outputs: Iterable[str],
                   transactional_id_prefix: str, groups: Iterable[str] = ()) -> None:
    grant(admin_conf, pipeline_acls(user, inputs, outputs, transactional_id_prefix, groups))


def grant_pipeline_except(admin_conf: Mapping[str, str], user: str, inputs: Iterable[str], outputs: Iterable[str],
                          transactional_id_prefix: str, omit: tuple[ResourceType, str, AclOperation],
                          groups: Iterable[str] = ()) -> None:
    """``grant_pipeline`` without the one binding ``omit`` = (resource type, name, operation)."""
    bindings = pipeline_acls(user, inputs, outputs, transactional_id_prefix, groups)
    kept = [b for b in bindings if (b.restype, b.name, b.operation) != omit]
    if len(kept) == len(bindings):
        raise ValueError(f"no pipeline ACL matches {omit}")
    grant(admin_conf, kept)
