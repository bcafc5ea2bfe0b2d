"""``kafka-eos status``: where a pipeline stands, from its checkpoint, its sink log and the live broker.

Facts: the checkpoint's last planned and last committed batch; per source partition the
position (the end of the last committed batch) and the lag to the read_committed end offset;
the sink log's last decision and its state (``txn.sink_status``); the Ongoing transactions under
the sink's transactional-id prefix (every owner's) with their age against ``transaction.timeout.ms``
and their ids' owner; the prefix's owner as its claim says (``txn.prefix_claim``).
How long input has waited with no batch committed, against the pipeline's stall threshold (the
value KafkaEosNoBatchCommitted uses; ``stall_check``), and whether the driver answers.
Exit codes: 0 healthy, 1 something needs attention (one line each, with the fix: a stall, a
transaction open longer than the stall threshold, a decided batch not committed, a login the
brokers refuse naming the user and mechanism), 2 a broker is unreachable, 3 the source
may not read its topic (``kafka-eos status`` in connectors/cli.py). Invariant:
status reads only (checkpoint, sink log, broker); it never commits, aborts or writes anything,
and its output is redacted (``render``).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka.errors import KafkaError

from kafka_eos import KafkaEosError
from kafka_eos.config.live import ClusterProblem, distinct_clusters, reachable, silent_brokers
from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.redact import Redactor
from kafka_eos.config.violations import INVALID
from kafka_eos.connectors.operate import stall_check
from kafka_eos.connectors.operate.lag_sampler import committed_position
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.spark_options import sink_options, source_options
from kafka_eos.connectors.operate.status_lines import lines as _lines
from kafka_eos.connectors.operate.status_facts import attention, decision_facts, open_facts, stall, verify_facts
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.sink.prefix_owner import checkpoint_identity, claim_settings
from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.offsets import model
from kafka_eos.offsets.kafka_offsets import KafkaLookupError, KafkaOffsets
from kafka_eos.txn.topics import prefix_ownership
from kafka_eos.txn.topics.claim_topic import ClaimTopic
from kafka_eos.txn.protocol.errors import SinkLogError
from kafka_eos.txn.protocol.sink_config import SinkConfig
from kafka_eos.txn.log.sink_markers import read_id_scheme
from kafka_eos.txn.log.sink_status import Decision, OpenTransaction, last_decision, open_transactions, prefix_ids
from kafka_eos.txn.log.follow_state import follow_lag
from kafka_eos.txn.log.verify_runs import latest_run

FORMAT_VERSION = 1
HEALTHY, ATTENTION, UNREACHABLE = 0, 1, 2
_STATUS = {HEALTHY: "healthy", ATTENTION: "attention", UNREACHABLE: "unreachable"}


@dataclass
class Report:
    """The facts (JSON-ready), what needs attention, and why a broker could not be asked."""
    facts: dict[str, Any] = field(default_factory=dict)
    attention: list[str] = field(default_factory=list)
    unreachable: str | None = None
    warnings: list[str] = field(default_factory=list)  # a listed broker silent while others answer: not the pipeline's health

    @property
    def exit_code(self) -> int:
        return UNREACHABLE if self.unreachable else ATTENTION if self.attention else HEALTHY

    def document(self) -> dict[str, Any]:
        return {"format_version": FORMAT_VERSION, "status": _STATUS[self.exit_code], "exit_code": self.exit_code,
                **self.facts, "attention": self.attention, "unreachable": self.unreachable, "warnings": self.warnings}


def _positions(cfg: PipelineConfig, report: Report) -> model.Offsets | None:
    """The checkpoint facts; returns the source position (end of the last committed batch)."""
    reader = CheckpointReader(cfg.checkpoint.location or "")
    planned, committed = reader.offset_batches(), reader.commit_batches()
    report.facts["checkpoint"] = {"location": cfg.checkpoint.location,
                                  "last_planned_batch": planned[-1] if planned else None,
                                  "last_committed_batch": committed[-1] if committed else None}
    position = committed_position(cfg.checkpoint.location or "")
    return position[1] if position is not None else None


def _source(cfg: PipelineConfig, positions: model.Offsets | None, timeout_s: float) -> dict[str, Any]:
    """Per source partition: position, read_committed end offset and lag."""
    options = parse_source_options(source_options(cfg), streaming=True)
    offsets = KafkaOffsets(options.admin_conf(), timeout_s)
    partitions = offsets.partitions(options.subscription) | set(positions or {})
    ends = offsets.latest(partitions)
    rows = []
    for tp in sorted(partitions):
        position, end = (positions or {}).get(tp), ends.get(tp)
        lag = None if position is None or end is None else max(0, end - position)
        rows.append({"topic": tp[0], "partition": tp[1], "position": position, "end": end, "lag": lag})
    known = [r["lag"] for r in rows if r["lag"] is not None]
    return {"partitions": rows, "total_lag": sum(known) if positions else None}


def _reach(cfg: PipelineConfig, timeout_s: float) -> tuple[str | None, bool]:
    """(why the source or sink cluster cannot be asked (None: both answer), whether it is the
    settings' fault, e.g. a refused login, rather than the cluster's)."""
    for path, cluster in distinct_clusters(cfg):
        try:
            reachable(cluster, path, timeout_s)
        except ClusterProblem as exc:
            if exc.violation.kind == INVALID:
                return f"{path}: {exc.violation.message} - fix: {exc.violation.fix}", True
            return (f"{path}: {exc.violation.message} - fix: start the cluster, or correct "
                    f"{path}.bootstrap_servers and its security settings"), False
    return None, False


def _open(sink: SinkConfig, report: Report) -> list[OpenTransaction] | None:
    """The open transactions under the sink's prefix (None, with an attention line, when the
    broker would not list or describe them)."""
    try:
        wide = prefix_ids(sink)
        opened = open_transactions(sink.producer_conf, wide)
    except (KafkaEosError, KafkaError, ConnectionError, TimeoutError) as exc:
        report.attention.append(f"the transactions under prefix {sink.transactional_id_prefix} could not be listed: "
                                f"{exc!r} - fix: grant the sink's principal Describe on TransactionalId (prefixed "
                                f"{sink.transactional_id_prefix}) and DescribeCluster, or check the brokers")
        return None
    facts = open_facts(opened)
    for row in facts["transactions"]:
        row["owner"] = wide.owner_in(row["transactional_id"]) or "legacy"
    report.facts["open_transactions"] = {"prefix": sink.transactional_id_prefix, **facts}
    return opened


def _claim(sink: SinkConfig, options: dict[str, str], report: Report, timeout_s: float) -> None:
    """The prefix's owner as its claim says (``txn.prefix_claim``), and the ids this checkpoint uses;
    an attention line when another checkpoint owns the prefix."""
    enabled, topic = claim_settings(options)
    scheme = read_id_scheme(sink.log_location)
    facts: dict[str, Any] = {"topic": topic, "this_owner": scheme.id_owner if scheme else None,
                             "claim": None}
    report.facts["prefix_owner"] = facts
    if not enabled:
        facts["claim"] = "off (sink option prefixClaim=off)"
        return
    try:
        store = ClaimTopic(sink.client_conf(), topic, timeout_s)
        current = prefix_ownership.latest(store.read(sink.transactional_id_prefix)[0]) if store.exists() else None
    except KafkaEosError as exc:
        report.attention.append(f"the owner of prefix {sink.transactional_id_prefix} could not be read: {exc}")
        return
    facts["claim"] = None if current is None else asdict(current)
    checkpoint = checkpoint_identity(options, sink.log_location)
    if current is not None and current.checkpoint != checkpoint:
        report.attention.append(f"prefix {sink.transactional_id_prefix} is claimed by the pipeline checkpointed at "
                                f"{current.checkpoint} (since {current.claimed_at}, host {current.host}): this "
                                "pipeline is refused at start - fix: give it another prefix, or retire the other")


def gather(cfg: PipelineConfig, timeout_s: float = 10.0) -> Report:
    """The status of ``cfg`` (reads the checkpoint, the sink log and the brokers)."""
    report = Report({"pipeline": cfg.name, "file": cfg.origin, "guarantee": cfg.guarantee.value})
    positions = _positions(cfg, report)
    sink = sink_config(sink_options(cfg)) if cfg.exactly_once else None
    decision: Decision | None = None
    if sink is not None:
        try:
            decision = last_decision(sink.log_location)
            report.facts["sink_log"] = {"location": sink.log_location, **decision_facts(decision)}
            report.facts["verify"], verify_attention = verify_facts(latest_run(sink.log_location), cfg.origin,
                                                                    follow_lag(sink.log_location))
            report.attention += verify_attention
        except (SinkLogError, ValueError) as exc:
            report.facts["sink_log"] = {"location": sink.log_location, "state": "unreadable"}
            report.attention.append(f"sink log {sink.log_location} cannot be read: {exc} - fix: run the "
                                    "kafka-eos build that wrote it")
    problem, refused = _reach(cfg, timeout_s)
    if refused:  # e.g. the login: the file's settings, not the cluster, need fixing
        report.attention.append(problem or "")
        return report
    report.unreachable = problem
    if report.unreachable:
        return report
    report.warnings = silent_brokers(cfg)
    try:
        report.facts["source"] = source = _source(cfg, positions, timeout_s)
        ends = {(r["topic"], r["partition"]): r["end"] for r in source["partitions"] if r["end"] is not None}
        stalled = stall_check.gather(cfg, positions, ends, timeout_s)
    except KafkaLookupError as exc:
        report.unreachable = f"{exc} - fix: check that the brokers are up and reachable"
        return report
    report.facts["stall"] = stalled.document()
    report.attention += stall(stalled, time.time(), cfg.origin)
    opened = _open(sink, report) if sink is not None else None
    if sink is not None:
        _claim(sink, sink_options(cfg), report, timeout_s)
    if decision is not None and sink is not None:
        report.attention += attention(decision, opened, stalled.threshold_s * 1000, cfg.origin)
    return report


def render(cfg: PipelineConfig, report: Report, as_json: bool = False) -> str:
    """One line per fact (or the JSON document), secrets redacted."""
    doc = report.document()
    if as_json:
        text = json.dumps(doc, indent=2, default=str)
    else:
        lines = _lines(doc)
        if report.unreachable:
            lines.append(f"broker unreachable: {report.unreachable}")
        lines += [f"warning: {line}" for line in report.warnings]
        lines += [f"attention: {line}" for line in report.attention]
        lines.append({HEALTHY: "status: healthy", ATTENTION: f"status: needs attention ({len(report.attention)})",
                      UNREACHABLE: "status: broker unreachable"}[report.exit_code])
        text = "\n".join(lines)
    return Redactor(cfg.secrets())(text)
