"""``kafka-eos retire``: release everything a pipeline that will not run again holds on the cluster.

Steps, each reported as one line:
  1. the checkpoint's transactional ids (``txn.sink_markers``: owner or legacy ids);
  2. recovery (``TwoPhaseCommitProtocol.recover``): a decided batch is committed; a batch with
     transactions the broker aborted (lost) stops the retirement (exit 1) - retiring would drop
     those records for good: run the pipeline once more to re-write them, then retire;
  3. the owner's other open transactions are aborted (and listed again: any left is exit 1);
  4. the prefix's claim is tombstoned when it is this checkpoint's (another's is left alone);
  5. the checkpoint is marked retired (create-only): a later run refuses to start, naming it.
Running it again is harmless: every step finds nothing left to do.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Mapping

from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.sink.prefix_owner import checkpoint_identity, claim_settings
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.log import sink_markers
from kafka_eos.txn.topics import prefix_ownership
from kafka_eos.txn.topics.claim_topic import ClaimTopic
from kafka_eos.txn.protocol.protocol import TwoPhaseCommitProtocol
from kafka_eos.txn.log.sink_status import DecisionState, last_decision
from kafka_eos.txn.protocol.transaction_aborter import TransactionAborter
from kafka_eos.txn.protocol.transactional_ids import owner_of


@dataclass
class Retirement:
    lines: list[str] = field(default_factory=list)
    exit_code: int = 0

    def say(self, line: str) -> None:
        self.lines.append(line)

    def fail(self, line: str) -> "Retirement":
        self.lines.append(line)
        self.exit_code = 1
        return self


def retire_sink(options: Mapping[str, str]) -> Retirement:
    """Steps 1-5 for the sink of the Spark option map ``options`` (``spark_options.sink_options``)."""
    out, config = Retirement(), sink_config(options)
    checkpoint = checkpoint_identity(options, config.log_location)
    location = OptionMap.of(options).get("checkpointLocation")
    query_id = CheckpointReader(str(location)).query_id() if location else None
    scheme = sink_markers.id_scheme(config.log_location, owner_of(query_id or config.log_location))   # step 1
    config = replace(config, id_owner=scheme.id_owner)
    out.say(f"checkpoint {checkpoint}: transactional ids {config.ids.describe()}")
    before = last_decision(config.log_location)                                                       # step 2
    TwoPhaseCommitProtocol.from_config(config, query_id).recover()
    after = last_decision(config.log_location)
    if after.state == DecisionState.LOST:
        return out.fail(f"batch {after.batch_id}: the broker aborted the transactions of sink partitions "
                        f"{list(after.lost)} ({after.lost_records} records) before they were committed; retiring "
                        "now would lose them for good. Run the pipeline once more (it re-writes them), then retire.")
    if before.state == DecisionState.DECIDED_PENDING:
        out.say(f"committed batch {before.batch_id} ({len(before.pending)} decided transactions, "
                f"{sum(p.records for p in before.pending)} records)")
    aborter = TransactionAborter(config.client_conf(), config.ids, config.commit_timeout_s)              # step 3
    aborted = aborter.abort_lingering()
    out.say(f"aborted {len(aborted)} open transactions" + (f": {', '.join(aborted)}" if aborted else ""))
    left = aborter.ongoing()
    if left:
        return out.fail(f"still open after the abort: {', '.join(left)}; check the brokers and retire again")
    enabled, topic = claim_settings(options)                                                          # step 4
    if enabled:
        released = prefix_ownership.release(ClaimTopic(config.client_conf(), topic, config.commit_timeout_s),
                                            config.transactional_id_prefix, checkpoint)
        out.say(f"released prefix {config.transactional_id_prefix} (topic {topic})" if released else
                f"prefix {config.transactional_id_prefix}: no claim of this checkpoint in topic {topic}; left as is")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")                                   # step 5
    if sink_markers.mark_retired(config.log_location, now, socket.gethostname()):
        out.say(f"retired checkpoint {checkpoint}: a later run of it refuses to start")
    else:
        out.say(f"checkpoint {checkpoint} was already retired")
    return out
