"""Live checks against the brokers named in a pipeline (skipped with ``--offline``).

Invariants:
- Each cluster is asked once per pipeline, through ``kafka_eos.txn.cluster.broker_configs`` (reads
  only): the exactly-once sink's cluster for its ``transaction.max.timeout.ms``, every other
  cluster for its metadata.
- A cluster that does not answer within ``timeout_s`` is an UNREACHABLE violation (exit 2);
  client settings librdkafka rejects are INVALID (exit 1). A login the brokers refuse (wrong
  password, unknown user: the user and SASL mechanism named, never the password; a TLS handshake
  refused; an OAuth client the token endpoint refuses: its answer, asked once more, never the
  secret) is a ``ClusterProblem`` with ``refused_login``: ``validate`` counts it UNAUTHORIZED
  (exit 3), ``kafka-eos status`` (``reachable``) reads its violation as the settings' fault
  (kind INVALID, an attention line). A DescribeConfigs the broker refuses as not authorized is
  UNAUTHORIZED, one that fails otherwise UNREACHABLE. Each violation names the YAML path of the cluster.
- On a cluster that answered, the pipeline principal's ACLs are asked (``kafka_eos.txn.cluster.acl_checks``,
  what ``config.acl_table.ACLS`` says ``validate`` asks: Read on the source topics and its named consumer group;
  Write on the sink, DLQ and late topics; for the exactly-once sink Write on the transactional-id
  prefix, probed with a real ``init_transactions`` whose answer also names IdempotentWrite if the
  broker asks for it, and Read and Write on the prefix-claim topic). Each missing ACL is an
  UNAUTHORIZED violation (exit 3) naming the principal, the resource and the ``kafka-acls``
  command to add it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from kafka_eos import KafkaEosError, broker_reach
from kafka_eos.config.model import KafkaCluster, PipelineConfig
from kafka_eos.config.spark_option_table import sink_option
from kafka_eos.config.violations import INVALID, UNAUTHORIZED, UNREACHABLE, Context, Violation
from kafka_eos.oauth_tokens import token_problem
from kafka_eos.offsets.acl_advice import MissingAcl
from kafka_eos.secrets import reveal
from kafka_eos.txn.cluster import acl_checks, broker_configs
from kafka_eos.txn.cluster.broker_configs import (AuthenticationFailed, BrokerConfigError, ClusterUnreachable,
                                          DescribeConfigsFailed, SettingsRefused)
from kafka_eos.txn.topics.prefix_claim import DEFAULT_CLAIM_TOPIC as CLAIM_TOPIC  # sink option prefixClaimTopic's default


@dataclass
class ClusterProblem(KafkaEosError):
    violation: Violation
    refused_login: bool = False  # the brokers refused the login (status: the settings' fault; validate: exit 3)

    def for_validate(self) -> Violation:
        """The violation as ``validate`` counts it: a refused login is UNAUTHORIZED."""
        return replace(self.violation, kind=UNAUTHORIZED) if self.refused_login else self.violation


def _problem(exc: BrokerConfigError, cluster: KafkaCluster, path: str, timeout_s: float) -> ClusterProblem:
    if isinstance(exc, SettingsRefused):
        return ClusterProblem(Violation(f"{path}.properties", f"the Kafka client refuses these settings: {exc.detail}",
                                        "use librdkafka setting names (see CONFIGURATION.md of librdkafka)"))
    oauth = token_problem(cluster.client_conf()) if isinstance(exc, (AuthenticationFailed, ClusterUnreachable)) else None
    if oauth is not None:  # librdkafka reports a refused OAuth client as a bare authentication error or no answer
        return ClusterProblem(Violation(f"{path}.properties", str(oauth), "fix the OAuth client settings named"), True)
    if isinstance(exc, AuthenticationFailed):
        return ClusterProblem(Violation(f"{path}.properties", f"{exc.detail} (at {cluster.bootstrap_servers})",
                                        exc.fix, kind=INVALID), True)
    if isinstance(exc, ClusterUnreachable) and exc.no_brokers:
        return ClusterProblem(Violation(f"{path}.bootstrap_servers", "the cluster answered with no live brokers",
                                        "wait for the brokers to start, or validate with --offline", kind=UNREACHABLE))
    if isinstance(exc, DescribeConfigsFailed):
        kind = UNAUTHORIZED if "AUTHORIZATION_FAILED" in exc.detail else UNREACHABLE
        return ClusterProblem(Violation(f"{path}.bootstrap_servers", f"DescribeConfigs on broker {exc.broker_id} "
                                        f"failed: {exc.detail}", "grant DescribeConfigs on the cluster, or validate "
                                        "with --offline", kind=kind))
    return ClusterProblem(Violation(f"{path}.bootstrap_servers", f"cannot reach Kafka at {cluster.bootstrap_servers} "
                                    f"within {timeout_s:g}s ({exc.detail})", "start the cluster or fix the "
                                    "address/security settings; or validate with --offline", kind=UNREACHABLE))


def transaction_max_timeout_ms(cluster: KafkaCluster, timeout_s: float = 10.0, path: str = "sink.kafka") -> int | None:
    """The broker's ``transaction.max.timeout.ms`` (None if it does not report one); failures
    raise ``ClusterProblem``."""
    try:
        return broker_configs.transaction_max_timeout_ms(cluster.client_conf(), timeout_s)
    except BrokerConfigError as exc:
        raise _problem(exc, cluster, path, timeout_s) from None


def reachable(cluster: KafkaCluster, path: str, timeout_s: float) -> None:
    try:
        broker_configs.broker_ids(broker_configs.admin_client(cluster.client_conf()), timeout_s)
    except BrokerConfigError as exc:
        raise _problem(exc, cluster, path, timeout_s) from None


def _acl_violation(missing: MissingAcl, path: str, bootstrap: str) -> Violation:
    return Violation(path, missing.describe(), f"grant it with: {missing.command(bootstrap)}", kind=UNAUTHORIZED)


def claim_topic(cfg: PipelineConfig) -> str | None:
    """The prefix-claim topic of an exactly-once sink (None: ``prefixClaim=off``, or an option value
    the rules refuse)."""
    options = {k: reveal(v) or "" for k, v in cfg.sink.options}
    try:
        if not cfg.exactly_once or sink_option("prefixClaim").read(options) != "broker":
            return None
        return str(sink_option("prefixClaimTopic").read(options) or CLAIM_TOPIC)
    except ValueError:
        return None


def _sink_topics(cfg: PipelineConfig) -> dict[str, str]:
    """Topic -> the YAML key naming it, of the topics the sink writes (output, DLQ, late records)."""
    watermark = cfg.transform.watermark
    named = (("sink.topic", cfg.sink.topic), ("errors.dlq_topic", cfg.errors.dlq_topic),
             ("transform.watermark.late_topic", watermark.late_topic if watermark else None))
    return {topic: path for path, topic in reversed(named) if topic}


def _source_missing(cfg: PipelineConfig, timeout_s: float) -> list[Violation]:
    source = cfg.source.kafka
    conf = source.client_conf()
    topics = set(cfg.source.topics) | {t for t, _ in cfg.source.assign}
    missing = acl_checks.topics_missing(conf, topics, "Read", timeout_s)
    group = source.get("group.id")
    missing += acl_checks.group_missing(conf, group, timeout_s) if group else []
    return [_acl_violation(m, "source.topics" if m.resource_type == "topic" else "source.kafka.properties",
                           str(source.bootstrap_servers)) for m in missing]


def _sink_missing(cfg: PipelineConfig, timeout_s: float) -> list[Violation]:
    sink, topics, claims = cfg.sink.kafka, _sink_topics(cfg), claim_topic(cfg)
    conf, prefix = sink.client_conf(), cfg.sink.transactional_id_prefix
    if cfg.exactly_once and prefix:
        topics.update({claims: "sink.options.prefixClaimTopic"} if claims else {})
        missing = acl_checks.sink_missing(conf, set(topics), prefix, timeout_s)
        missing += acl_checks.topics_missing(conf, [claims], "Read", timeout_s) if claims else []
    else:
        missing = acl_checks.topics_missing(conf, set(topics), "Write", timeout_s)
    paths = {"transactional-id": "sink.transactional_id_prefix", "cluster": "sink.kafka"}
    return [_acl_violation(m, paths.get(m.resource_type) or topics.get(m.resource, "sink.topic"),
                           str(sink.bootstrap_servers)) for m in missing]


def acl_problems(cfg: PipelineConfig, timeout_s: float, source_ok: bool = True, sink_ok: bool = True) -> list[Violation]:
    """The ACLs the pipeline's principals lack on the clusters that answered (``config.acl_table.ACLS``' asks)."""
    found: list[Violation] = []
    if source_ok and cfg.source.kafka.bootstrap_servers:
        found += _source_missing(cfg, timeout_s)
    if sink_ok and cfg.sink.kafka.bootstrap_servers:
        found += _sink_missing(cfg, timeout_s)
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
            problems.append(exc.for_validate())
            sink_ok = False
            source_ok = source.bootstrap_servers != sink.bootstrap_servers
    if source.bootstrap_servers and source.bootstrap_servers not in asked:
        try:
            reachable(source, "source.kafka", timeout_s)
        except ClusterProblem as exc:
            problems.append(exc.for_validate())
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
