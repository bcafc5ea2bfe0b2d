"""A Kafka control-plane client for the driver: FindCoordinator, EndTxn, DescribeTransactions,
ListTransactions, DescribeConfigs — the requests confluent-kafka's AdminClient does not offer.

Built (``kafka_eos.client_factory.control_plane_client``) on kafka-python's protocol layer with
the same connection and security settings as the producers (librdkafka settings carried by
``kafka_eos.txn.cluster.client_settings``, which refuses what it cannot carry). One client per
(settings) per process. A request waits at most 10 s and sockets use TCP keepalive
(``kafka_clients.control_plane_settings``): a hung coordinator costs one request
(``kafka_clients.TIMEOUTS``: "control.end_txn", "control.describe_transactions",
"control.list_transactions").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

from kafka_eos.client_factory import HeldClients, control_plane_client
from kafka_eos.txn.cluster.client_settings import IGNORED, kafka_python_settings

if TYPE_CHECKING:  # kafka-python loads with the first client: a task's worker never builds one
    from kafka_eos.control_plane_client import ControlPlaneClient

__all__ = ["ControlPlaneFactory", "control_plane"]

ControlPlaneFactory = Callable[[Mapping[str, str]], "ControlPlaneClient"]
"""What collaborators (the committer, the aborter) receive: librdkafka settings -> client."""

_clients: HeldClients["ControlPlaneClient"] = HeldClients(
    lambda conf: control_plane_client(kafka_python_settings(conf)), IGNORED)


def control_plane(conf: Mapping[str, str]) -> ControlPlaneClient:
    """The process-wide client for these connection settings (created on first use); raises
    ``ClientSettingsError`` for a security setting it cannot carry."""
    return _clients.get(conf)
