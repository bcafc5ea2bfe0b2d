"""SinkQueries: this process's state of the sink's queries, keyed by (query id, sink log).

Per-process state is unavoidable in Spark's model: pyspark builds a new writer for every
micro-batch and another for every commit or abort, each in a long-lived driver-side Python
worker, and nothing survives from one writer to the next but the process. This registry is the
only such state of the sink; it holds, per (query id of the checkpoint, sink log location):
- the id owner the query's prefix claim settled (the claim runs once per query and process);
- one ``TwoPhaseCommitProtocol`` (built again only if the sink's settings changed, e.g. a query
  restarted with other options in a long-lived process);
- whether the query start's lingering-transaction cleanup ran (once per query and process).
It calls no cluster itself: what it builds or runs is passed in.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from kafka_eos.txn.protocol.faults import FaultPlan
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.protocol.sink_config import SinkConfig

Query = tuple[str | None, str]  # (query id of the checkpoint, sink log location)
BuildProtocol = Callable[[SinkConfig, str | None, FaultPlan], TwoPhaseCommitProtocol]


def query_of(config: SinkConfig, query_id: str | None) -> Query:
    return query_id, config.log_location


class SinkQueries:
    def __init__(self, build: BuildProtocol = TwoPhaseCommitProtocol.from_config) -> None:
        self._build = build
        self._owners: dict[Query, str | None] = {}
        self._protocols: dict[Query, tuple[SinkConfig, FaultPlan, TwoPhaseCommitProtocol]] = {}
        self._started: set[Query] = set()

    def owned(self, config: SinkConfig, query_id: str | None,
              claim: Callable[[SinkConfig], SinkConfig]) -> SinkConfig:
        """``config`` with the query's id owner; ``claim`` settles it the first time only."""
        query = query_of(config, query_id)
        if query not in self._owners:
            self._owners[query] = claim(config).id_owner
        return replace(config, id_owner=self._owners[query])

    def protocol(self, config: SinkConfig, faults: FaultPlan, query_id: str | None) -> TwoPhaseCommitProtocol:
        """The query's protocol in this process (built from ``config`` once, again if it changed)."""
        query = query_of(config, query_id)
        cached = self._protocols.get(query)
        if cached is None or cached[:2] != (config, faults):
            cached = self._protocols[query] = (config, faults, self._build(config, query_id, faults))
        return cached[2]

    def first_start(self, config: SinkConfig, query_id: str | None) -> bool:
        """True the first time only: the query's start-once steps run now in this process."""
        query = query_of(config, query_id)
        if query in self._started:
            return False
        self._started.add(query)
        return True


SINK_QUERIES = SinkQueries()  # the process's one registry
