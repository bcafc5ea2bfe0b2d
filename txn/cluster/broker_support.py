"""Which Kafka brokers the sink runs on: the one owner of the supported-broker rule.

Invariants:
- Supported: Kafka ``MIN_BROKER`` (3.7) and later, the oldest version the exactly-once proofs ran
  on (``integration_tests/broker/test_broker_versions.py``: 3.7, 3.9 and the pinned 4.x, with
  ``transaction.version`` 0 and 2). A broker's version is what its ApiVersions answer tells
  (kafka-python's inference: the newest release whose request versions it offers).
- Every request the driver sends outside librdkafka must be offered: EndTxn (the commit),
  DescribeTransactions (the commit's not-ours resolution, the cleanup), ListTransactions (the
  query start's lingering-transaction abort). A broker lacking one is refused naming it.
- The driver's EndTxn stays at v4 (``END_TXN_MAX_VERSION``, transactions v1) on every broker:
  on a ``transaction.version=2`` broker it commits and aborts v2 transactions as well
  (``integration_tests/broker/test_txn_v2.py``), so the feature is read for the message only.
- Reads only (Metadata for the live brokers, then ApiVersions on each); every broker of the cluster is checked, so a
  rolling upgrade with one old broker left is refused too. A broker that does not answer (hung, cut
  off) does not stop the check: it is returned as silent (``BrokerCheck``), for the caller to ask again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping

from kafka_eos import KafkaEosError
from kafka_eos.client_factory import AdminFactory
from kafka_eos.kafka_clients import is_transient
from kafka_eos.txn.cluster.broker_configs import admin_client, broker_ids
from kafka_eos.txn.cluster.control_plane import ControlPlaneFactory, control_plane

MIN_BROKER = (3, 7)
# Kafka API keys (the protocol's numbers; kafka-python's ApiKey is imported by the driver alone)
NEEDED = {(26, "EndTxn"): "the driver's commit (EndTxn by producer id and epoch)",
          (65, "DescribeTransactions"): "resolving a fenced commit and the cleanup (KIP-664)",
          (66, "ListTransactions"): "the query start's abort of lingering transactions (KIP-664)"}


class UnsupportedBrokerError(KafkaEosError):
    """A broker of the cluster is older than the sink's proofs, or lacks a request the sink sends."""


def unsupported(broker: str, version: tuple[int, ...], api_versions: Mapping[int, tuple[int, int]]) -> str | None:
    """Why ``broker`` (its id and address), of ``version`` with these ApiVersions, is refused; None if it is not."""
    named = ".".join(map(str, version[:2]))
    missing = [f"{name} ({use})" for (key, name), use in NEEDED.items() if key not in api_versions]
    if missing:
        return (f"Kafka broker {broker} (Kafka {named} by its ApiVersions) does not offer {', '.join(missing)}; "
                f"kafka-eos needs Kafka {'.'.join(map(str, MIN_BROKER))}+: upgrade the cluster")
    if tuple(version[:2]) < MIN_BROKER:
        return (f"Kafka broker {broker} is Kafka {named} (by its ApiVersions); kafka-eos's exactly-once proofs "
                f"run on Kafka {'.'.join(map(str, MIN_BROKER))}+ (3.7, 3.9, 4.x): upgrade the cluster to 3.7 or later")
    return None


@dataclass(frozen=True)
class BrokerCheck:
    """What one check saw: the brokers that answered and are supported, the ones that did not answer."""
    supported: frozenset[int]
    silent: frozenset[int]


def check_brokers(conf: Mapping[str, str], timeout_s: float, factory: ControlPlaneFactory = control_plane,
                  new_admin: AdminFactory = admin_client, skip: Collection[int] = ()) -> BrokerCheck:
    """Raise ``UnsupportedBrokerError`` naming every live broker (Metadata) that answers and the sink
    cannot run on; a broker that does not answer (hung, cut off: a transient failure) is returned
    as silent, for the caller to name and ask again later. Brokers in ``skip`` are not asked."""
    client = factory(conf)
    reasons, supported, silent = [], set(), set()
    for broker in broker_ids(new_admin(conf), timeout_s):
        if broker in skip:
            continue
        try:
            data = client.get_broker_version_data(broker)
        except Exception as exc:  # noqa: BLE001 - classified: only a broker that does not answer is let through
            if not is_transient(exc):
                raise
            silent.add(broker)
            continue
        reason = unsupported(str(broker), data.broker_version, data.api_versions)
        if reason:
            reasons.append(reason)
        else:
            supported.add(broker)
    if reasons:
        raise UnsupportedBrokerError("; ".join(reasons))
    return BrokerCheck(frozenset(supported), frozenset(silent))
