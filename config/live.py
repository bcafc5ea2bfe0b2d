"""Live checks against the brokers named in a pipeline (skipped with ``--offline``).

Invariants:
- Each cluster is asked once per pipeline, through ``kafka_eos.txn.broker_configs`` (reads
  only): the exactly-once sink's cluster for its ``transaction.max.timeout.ms``, every other
  cluster for its metadata.
- A cluster that does not answer within ``timeout_s`` (or refuses DescribeConfigs) is an
  UNREACHABLE violation (exit 2), not an invalid setting; client settings librdkafka rejects
  are INVALID (exit 1), and so is a refused login (wrong password, unknown user: the user and
  SASL mechanism named, never the password; an OAuth client the token endpoint refuses: its
  answer, asked once more, never the secret). Each violation names the YAML path of the cluster.
- On a cluster that answered, the pipeline principal's ACLs are asked (``kafka_eos.txn.acl_checks``:
  Read on the source topics and its named consumer group; for the exactly-once sink Write on the sink
  and DLQ topics and Write on the transactional-id prefix, probed with a real ``init_transactions``,
  whose answer also names IdempotentWrite if the broker asks for it). Each missing ACL is an
  UNREACHABLE violation (exit 2, like a refused DescribeConfigs) naming the principal, the
  resource and the ``kafka-acls`` command to add it.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_eos import KafkaEosError, broker_reach
from kafka_eos.config.model import KafkaCluster, PipelineConfig
from kafka_eos.config.violations import UNREACHABLE, Context, Violation
from kafka_eos.oauth_tokens import token_problem
from kafka_eos.offsets.acl_advice import MissingAcl
from kafka_eos.txn import acl_checks, broker_configs
from kafka_eos.txn.broker_configs import (AuthenticationFailed, BrokerConfigError, ClusterUnreachable,
                                          DescribeConfigsFailed, SettingsRefused)


@dataclass
class ClusterProblem(KafkaEosError):
    violation: Violation


def _violation(exc: BrokerConfigError, cluster: KafkaCluster, path: str, timeout_s: float) -> Violation:
    if isinstance(exc, SettingsRefused):
        return Violation(f"{path}.properties", f"the Kafka client refuses these settings: {exc.detail}",
                         "use librdkafka setting names (see CONFIGURATION.md of librdkafka)")
    oauth = token_problem(cluster.client_conf()) if isinstance(exc, (AuthenticationFailed, ClusterUnreachable)) else None
    if oauth is not None:  # librdkafka reports a refused OAuth client as a bare authentication error or no answer
        return Violation(f"{path}.properties", str(oauth), "fix the OAuth client settings named")
    if isinstance(exc, AuthenticationFailed):
        return Violation(f"{path}.properties", f"{exc.detail} (at {cluster.bootstrap_servers})", exc.fix)
    if isinstance(exc, ClusterUnreachable) and exc.no_brokers:
        return Violation(f"{path}.bootstrap_servers", "the cluster answered with no live brokers",
                         "wait for the brokers to start, or validate with --offline", kind=UNREACHABLE)
    if isinstance(exc, DescribeConfigsFailed):
        return Violation(f"{path}.bootstrap_servers", f"DescribeConfigs on broker {exc.broker_id} failed: {exc.detail}",
                         "grant DescribeConfigs on the cluster, or validate with --offline", kind=UNREACHABLE)
    return Violation(f"{path}.bootstrap_servers", f"cannot reach Kafka at {cluster.bootstrap_servers} within "
                     f"{timeout_s:g}s ({exc.detail})",
                     "start the cluster or fix the address/security settings; or validate with --offline",
                     kind=UNREACHABLE)


def transaction_max_timeout_ms(cluster: KafkaCluster, timeout_s: float = 10.0, path: str = "sink.kafka") -> int | None:
    """The broker's ``transaction.max.timeout.ms`` (None if it does not report one); failures
    raise ``ClusterProblem``."""
    try:
        return broker_configs.transaction_max_timeout_ms(cluster.client_conf(), timeout_s)
    except BrokerConfigError as exc:
        raise ClusterProblem(_violation(exc, cluster, path, timeout_s)) from None


def reachable(cluster: KafkaCluster, path: str, timeout_s: float) -> None:
    try:
        broker_configs.broker_ids(broker_configs.admin_client(cluster.client_conf()), timeout_s)
    except BrokerConfigError as exc:
        raise ClusterProblem(_violation(exc, cluster, path, timeout_s)) from None


def _acl_violation(missing: MissingAcl, path: str, bootstrap: str) -> Violation:
    return Violation(path, missing.describe(), f"grant it with: {missing.command(bootstrap)}", kind=UNREACHABLE)


def acl_problems(cfg: PipelineConfig, timeout_s: float, source_ok: bool = True, sink_ok: bool = True) -> list[Violation]:
    """The ACLs the pipeline's principals lack on the clusters that answered."""
    found: list[Violation] = []
    source, sink = cfg.source.kafka, cfg.sink.kafka
    if source_ok and source.bootstrap_servers:
        conf = source.client_conf()
        topics = set(cfg.source.topics) | {t for t, _ in cfg.source.assign}
        missing = acl_checks.topics_missing(conf, topics, "Read", timeout_s)
        group = source.get("group.id")
        missing += acl_checks.group_missing(conf, group, timeout_s) if group else []
        found += [_acl_violation(m, "source.topics" if m.resource_type == "topic" else "source.kafka.properties",
                                 source.bootstrap_servers) for m in missing]
    if sink_ok and sink.bootstrap_servers and cfg.exactly_once and cfg.sink.transactional_id_prefix:
        topics = {t for t in (cfg.sink.topic, cfg.errors.dlq_topic) if t}
        missing = acl_checks.sink_missing(sink.client_conf(), topics, cfg.sink.transactional_id_prefix, timeout_s)
        paths = {"topic": "sink.topic", "transactional-id": "sink.transactional_id_prefix", "cluster": "sink.kafka"}
        found += [_acl_violation(m, paths.get(m.resource_type, "sink.kafka"), sink.bootstrap_servers) for m in missing]
    return found


def live_context(cfg: PipelineConfig, timeout_s: float = 10.0) -> tuple[Context, list[Violation]]:
    """(what the rules may know from the brokers, problems reaching them); each cluster is asked once."""
    problems, broker_max, asked, sink_ok, source_ok = [], None, set(), True, True
    sink, source = cfg.sink.kafka, cfg.source.kafka
    if sink.bootstrap_servers:
        asked.add(sink.bootstrap_servers)
        try:
            if cfg.exactly_once:
                broker_max = transaction_max_timeout_ms(sink, timeout_s)
            else:
                reachable(sink, "sink.kafka", timeout_s)
        except ClusterProblem as exc:
            problems.append(exc.violation)
            sink_ok = False
            source_ok = source.bootstrap_servers != sink.bootstrap_servers
    if source.bootstrap_servers and source.bootstrap_servers not in asked:
        try:
            reachable(source, "source.kafka", timeout_s)
        except ClusterProblem as exc:
            problems.append(exc.violation)
            source_ok = False
    if source_ok or sink_ok:
        problems += acl_problems(cfg, timeout_s, source_ok, sink_ok)
    return Context(broker_max_timeout_ms=broker_max), problems


SILENT_PROBE_S = 5.0  # each listed broker of a cluster is asked this long, all at once


def distinct_clusters(cfg: PipelineConfig) -> list[tuple[str, KafkaCluster]]:
    """(YAML path, cluster) of the source's and the sink's cluster, each bootstrap list once."""
    seen: dict[str, tuple[str, KafkaCluster]] = {}
    for path, cluster in (("source.kafka", cfg.source.kafka), ("sink.kafka", cfg.sink.kafka)):
        if cluster.bootstrap_servers:
            seen.setdefault(cluster.bootstrap_servers, (path, cluster))
    return list(seen.values())


def silent_brokers(cfg: PipelineConfig, timeout_s: float = SILENT_PROBE_S) -> list[str]:
    """One warning per listed broker that does not answer while another of its cluster does (when
    none answers, the reachability checks say so); each cluster is asked once, its brokers at once."""
    warnings = []
    for path, cluster in distinct_clusters(cfg):
        found = broker_reach.probe(cluster.client_conf(), timeout_s)
        if any(outcome is None for outcome in found.values()):
            warnings += [f"{path}: broker {address} {outcome}; the answers here come from the other brokers"
                         for address, outcome in found.items() if outcome is not None]
    return warnings
