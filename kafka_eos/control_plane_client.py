"""The driver's control-plane client class: kafka-python's KafkaAdminClient plus EndTxn for a
transaction some other client (an executor's librdkafka producer) opened.

Its connections go through ``kafka_eos.control_plane_bootstrap`` (every bootstrap broker in
turn, one clear error when none answers). Only the class lives here (bottom layer, so
``kafka_eos.client_factory`` can build it); which librdkafka settings it carries and the
one-client-per-settings cache stay in ``kafka_eos.txn.cluster.control_plane``. Enforced here: EndTxn is sent at most at version
``END_TXN_MAX_VERSION`` (transactions v1, what librdkafka-opened transactions need).
"""
from __future__ import annotations

from collections import Counter

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.net.compat import KafkaNetClient
from kafka.net.selector import NetworkSelector
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata import CoordinatorType
from kafka.protocol.producer.transaction import EndTxnRequest

from kafka_eos.control_plane_bootstrap import FailoverConnectionManager
from kafka_eos.kafka_clients import control_plane_connection_settings

# Fetch v12: the last version that names topics (v13+ names them by id); Kafka 4 serves v4-v17.
FETCH_MAX_VERSION = 12
READ_UNCOMMITTED = 0

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

    def fetch_raw(self, topic: str, partition: int, offset: int, max_bytes: int) -> tuple[int, int, int, bytes]:
        """One Fetch (read_uncommitted: every record batch, control batches too) of a partition from
        ``offset``: (error code, high watermark, log start offset, the record batches' bytes)."""
        return self._manager.run(self._fetch_raw, topic, partition, offset, max_bytes)

    async def _fetch_raw(self, topic, partition, offset, max_bytes):
        leaders = await self._async_get_leader_for_partitions({TopicPartition(topic, partition)})
        fetch = FetchRequest.FetchTopic.FetchPartition(partition=partition, fetch_offset=offset, log_start_offset=-1,
                                                       partition_max_bytes=max_bytes, current_leader_epoch=-1)
        request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
                               isolation_level=READ_UNCOMMITTED, session_id=0, session_epoch=-1,
                               topics=[FetchRequest.FetchTopic(topic=topic, partitions=[fetch])],
                               forgotten_topics_data=[], rack_id="", max_version=FETCH_MAX_VERSION)
        response = await self._manager.send(request, node_id=next(iter(leaders)))
        data = response.responses[0].partitions[0]
        return data.error_code, data.high_watermark, data.log_start_offset, bytes(data.records or b"")

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
