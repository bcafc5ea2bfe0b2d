"""The sink's ownership of its transactional ids (the query start's step 4; ``SinkQueries`` runs it
once per query and driver process).

``owned_config(config, options, query_id)`` (``owned_scheme``: steps 1 and 2 only):
1. a retired checkpoint (``kafka-eos retire``) is refused: ``CheckpointRetiredError``;
2. the id scheme of the checkpoint's sink log (``txn.sink_markers.id_scheme``: the owner ids
   ``<prefix>-<owner>-<p>-<slot>``, owner = ``owner_of(query id)``, or the legacy ids of a sink
   log started by an older build) is set on the returned config, which the tasks then use;
3. the prefix is claimed on the cluster (``txn.prefix_ownership.claim``) unless sink option
   ``prefixClaim=off``, which logs a warning at every start.
Options: ``prefixClaim`` (``broker``, the default, or ``off``), ``prefixClaimTopic`` (default
``_kafka_eos_prefix_claims``). At-least-once sinks have no transactions: nothing is claimed.
"""
from __future__ import annotations

import logging
import os
import socket
from dataclasses import replace
from datetime import datetime, timezone
from typing import Mapping
from urllib.parse import urlparse

from kafka_eos.config.spark_option_table import sink_option
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.log import sink_markers
from kafka_eos.txn.topics import prefix_ownership
from kafka_eos.txn.topics.claim_topic import ClaimTopic
from kafka_eos.txn.protocol.errors import CheckpointRetiredError, SinkConfigError
from kafka_eos.txn.topics.prefix_claim import DEFAULT_CLAIM_TOPIC, Claim
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter
from kafka_eos.txn.protocol.transactional_ids import TransactionalIdFactory, owner_of

log = logging.getLogger(__name__)


def checkpoint_identity(options: Mapping[str, str], log_location: str) -> str:
    """The checkpoint a claim names: ``checkpointLocation`` (a local path made absolute), else the sink log."""
    location = OptionMap.of(options).get("checkpointLocation") or log_location
    location = str(location).rstrip("/")
    return os.path.abspath(location) if urlparse(location).scheme == "" else location


def claim_settings(options: Mapping[str, str]) -> tuple[bool, str]:
    """(claim on the cluster?, the claim topic) from sink options prefixClaim / prefixClaimTopic."""
    mode = sink_option("prefixClaim").read(options, SinkConfigError)
    topic = str(sink_option("prefixClaimTopic").read(options, SinkConfigError) or DEFAULT_CLAIM_TOPIC)  # a text option
    return mode == "broker", topic


def new_claim(config: SinkConfig, checkpoint: str, query_id: str | None) -> Claim:
    return Claim(config.transactional_id_prefix, checkpoint, query_id, config.id_owner,
                 datetime.now(timezone.utc).isoformat(timespec="seconds"), socket.gethostname())


def check_not_retired(log_location: str) -> None:
    marker = sink_markers.retired(log_location)
    if marker is not None:
        raise CheckpointRetiredError.of_marker(f"{log_location}/{sink_markers.RETIRED}", marker.get("retired_at", "?"))


def owned_scheme(config: SinkConfig, options: Mapping[str, str], query_id: str | None) -> SinkConfig:
    """Steps 1 and 2 only (no cluster call): what a commit writer needs, the prefix being claimed
    by the task writers' start of the same query."""
    check_not_retired(config.log_location)                                           # step 1
    if not config.exactly_once:
        return config
    scheme = sink_markers.id_scheme(config.log_location, owner_of(query_id or config.log_location))
    return replace(config, id_owner=scheme.id_owner)                                 # step 2


def owned_config(config: SinkConfig, options: Mapping[str, str], query_id: str | None) -> SinkConfig:
    config = owned_scheme(config, options, query_id)                                 # steps 1, 2
    if not config.exactly_once:
        return config
    enabled, topic = claim_settings(options)
    checkpoint = checkpoint_identity(options, config.log_location)
    if enabled:                                                                      # step 3
        store = ClaimTopic(config.client_conf(), topic, config.commit_timeout_s)
        store.ensure()

        def abort_owner(owner: str | None) -> None:
            ids = TransactionalIdFactory(config.transactional_id_prefix, config.slots, owner)
            TransactionAborter(config.client_conf(), ids, config.commit_timeout_s).abort_lingering()
        prefix_ownership.claim(store, new_claim(config, checkpoint, query_id), abort_owner)
    else:
        log.warning("kafka-eos: prefixClaim=off: transactional.id.prefix %r is not claimed; nothing stops another "
                    "pipeline (checkpoint other than %s) from using it and aborting this one's transactions",
                    config.transactional_id_prefix, checkpoint)
    return config
