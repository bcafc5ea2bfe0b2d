"""The driver's control-plane client class: kafka-python's KafkaAdminClient plus EndTxn for a
transaction some other client (an executor's librdkafka producer) opened.

Its connections go through ``kafka_eos.control_plane_bootstrap`` (every bootstrap broker in
turn, one clear error when none answers). Only the class lives here (bottom layer, so
``kafka_eos.client_factory`` can build it); which librdkafka settings it carries and the
one-client-per-settings cache stay in ``kafka_eos.txn.control_plane``. Enforced here: EndTxn is sent at most at version
``END_TXN_MAX_VERSION`` (transactions v1, what librdkafka-opened transactions need).
"""
from __future__ import annotations

from collections import Counter

from kafka.admin import KafkaAdminClient
from kafka.net.compat import KafkaNetClient
from kafka.net.selector import NetworkSelector
from kafka.protocol.metadata import CoordinatorType
from kafka.protocol.producer.transaction import EndTxnRequest

from kafka_eos.control_plane_bootstrap import FailoverConnectionManager
from kafka_eos.kafka_clients import control_plane_connection_settings

# EndTxn v3/v4 = transactions v1 semantics, which librdkafka-opened transactions need (v5+ is
# transactions v2 and must not be mixed with a v1 client's transactions).
END_TXN_MAX_VERSION = 4


class FailoverNetClient(KafkaNetClient):
    """kafka-python's network client on ``FailoverConnectionManager``."""

    def __init__(self, **configs: object) -> None:
        net = NetworkSelector(**configs)
        manager = FailoverConnectionManager(net, **{**configs, **control_plane_connection_settings()})
        super().__init__(net=net, manager=manager, **configs)


class ControlPlaneClient(KafkaAdminClient):
    """KafkaAdminClient plus EndTxn for a transaction some other client opened."""

    DEFAULT_CONFIG = {**KafkaAdminClient.DEFAULT_CONFIG, "kafka_client": FailoverNetClient}

    def end_txn_round(self, requests: list[tuple[str, int, int]], commit: bool) -> dict[str, int]:
        """Send EndTxn for each (transactional id, producer id, epoch) at once; return error codes."""
        return self._manager.run(self._end_txn_round, requests, commit)

    async def _end_txn_round(self, requests, commit):
        nodes = await self._find_coordinator_ids([r[0] for r in requests], CoordinatorType.TRANSACTION)
        codes: dict[str, int] = {}
        for window in _windows(requests, nodes, self._manager.config["max_in_flight_requests_per_connection"]):
            futures = {}
            for tid, pid, epoch in window:
                request = EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                        committed=commit, max_version=END_TXN_MAX_VERSION)
                futures[tid] = self._manager.send(request, node_id=nodes[tid])
            for tid, future in futures.items():
                try:
                    codes[tid] = (await future).error_code
                except Exception:  # noqa: BLE001 - connection-level failure: retry the round
                    codes[tid] = -1
        return codes

    def live_brokers(self) -> list[int]:
        """The broker ids of the client's cluster metadata, lowest first."""
        return sorted(broker.node_id for broker in self._manager.cluster.brokers())

    def forget_coordinators(self, transactional_ids: list[str]) -> None:
        """Drop the cached coordinators of these ids and ask for fresh metadata, so the next
        round's FindCoordinator goes to a live broker (the one we knew may be down)."""
        cluster = self._manager.cluster
        coordinators = cluster._coordinators
        for tid in transactional_ids:
            for key in [k for k in coordinators if k[1] == tid]:
                coordinators.pop(key, None)
        cluster.request_update()


def _windows(requests: list[tuple[str, int, int]], nodes: dict[str, int],
             in_flight: int) -> list[list[tuple[str, int, int]]]:
    """The requests in windows of at most ``in_flight`` per coordinator: a connection pauses at its
    in-flight limit and fails what is sent past it (a round of 64 ended 5 before this)."""
    windows: list[list[tuple[str, int, int]]] = []
    sent: Counter[int] = Counter()  # requests per coordinator so far
    for request in requests:
        node = nodes[request[0]]
        slot = sent[node] // in_flight
        sent[node] += 1
        if slot == len(windows):
            windows.append([])
        windows[slot].append(request)
    return windows
