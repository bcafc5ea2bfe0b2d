"""A Kafka control-plane client for the driver: FindCoordinator, EndTxn, DescribeTransactions,
ListTransactions, DescribeConfigs — the requests confluent-kafka's AdminClient does not offer.

Built on kafka-python's protocol layer with the same connection and security settings as the
producers (librdkafka settings carried by ``kafka_eos.txn.client_settings``, which refuses what it
cannot carry). One client per (settings) per process. A request waits at most 10 s and sockets
use TCP keepalive (``kafka_clients.control_plane_settings``): a hung coordinator costs one request
(``kafka_clients.TIMEOUTS``: "control.end_txn", "control.describe_transactions",
"control.list_transactions").
"""
from __future__ import annotations

import threading
from typing import Mapping

from kafka.admin import KafkaAdminClient
from kafka.protocol.metadata import CoordinatorType
from kafka.protocol.producer.transaction import EndTxnRequest

from kafka_eos.kafka_clients import control_plane_settings
from kafka_eos.txn.client_settings import IGNORED, kafka_python_settings

# EndTxn v3/v4 = transactions v1 semantics, which librdkafka-opened transactions need (v5+ is
# transactions v2 and must not be mixed with a v1 client's transactions).
END_TXN_MAX_VERSION = 4

_clients: dict[tuple, "ControlPlaneClient"] = {}
_lock = threading.Lock()


class ControlPlaneClient(KafkaAdminClient):
    """KafkaAdminClient plus EndTxn for a transaction some other client opened."""

    def end_txn_round(self, requests: list[tuple[str, int, int]], commit: bool) -> dict[str, int]:
        """Send EndTxn for each (transactional id, producer id, epoch) at once; return error codes."""
        return self._manager.run(self._end_txn_round, requests, commit)

    async def _end_txn_round(self, requests, commit):
        nodes = await self._find_coordinator_ids([r[0] for r in requests], CoordinatorType.TRANSACTION)
        futures = {}
        for tid, pid, epoch in requests:
            request = EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                    committed=commit, max_version=END_TXN_MAX_VERSION)
            futures[tid] = self._manager.send(request, node_id=nodes[tid])
        codes = {}
        for tid, future in futures.items():
            try:
                codes[tid] = (await future).error_code
            except Exception:  # noqa: BLE001 - connection-level failure: retry the round
                codes[tid] = -1
        return codes

    def forget_coordinators(self, transactional_ids: list[str]) -> None:
        """Drop the cached coordinators of these ids and ask for fresh metadata, so the next
        round's FindCoordinator goes to a live broker (the one we knew may be down)."""
        cluster = self._manager.cluster
        coordinators = cluster._coordinators
        for tid in transactional_ids:
            for key in [k for k in coordinators if k[1] == tid]:
                coordinators.pop(key, None)
        cluster.request_update()


def control_plane(conf: Mapping[str, str]) -> ControlPlaneClient:
    """The process-wide client for these connection settings (created on first use); raises
    ``ClientSettingsError`` for a security setting it cannot carry."""
    key = tuple(sorted((k, str(v)) for k, v in conf.items() if k not in IGNORED))
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = ControlPlaneClient(**kafka_python_settings(conf), **control_plane_settings())
        return client
