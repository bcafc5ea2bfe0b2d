"""Live checks against the brokers named in a pipeline (skipped with ``--offline``).

Invariants:
- Reads only (Metadata, DescribeConfigs); nothing is created or changed on a cluster.
- ``transaction.max.timeout.ms`` comes from DescribeConfigs on a BROKER resource, the broker id
  taken from cluster metadata; the value reported includes the broker's defaults.
- A cluster that does not answer within ``timeout_s`` is an UNREACHABLE violation (exit 2), not
  an invalid setting; client settings librdkafka rejects are INVALID (exit 1).
"""
from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kafka_eos import KafkaEosError
from kafka_eos.config.model import KafkaCluster, PipelineConfig
from kafka_eos.config.violations import UNREACHABLE, Context, Violation

MAX_TIMEOUT_KEY = "transaction.max.timeout.ms"
_TRANSIENT = {KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}


def _transient(exc: BaseException) -> bool:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return isinstance(error, KafkaError) and (error.retriable() or error.code() in _TRANSIENT)


@dataclass
class ClusterProblem(KafkaEosError):
    violation: Violation


def _admin(cluster: KafkaCluster, path: str) -> AdminClient:
    try:
        return AdminClient({**cluster.client_conf(), "log_level": 0})
    except (KafkaException, ValueError, TypeError) as exc:
        raise ClusterProblem(Violation(f"{path}.properties", f"the Kafka client refuses these settings: {exc}",
                                       "use librdkafka setting names (see CONFIGURATION.md of librdkafka)")) from None


def _broker_ids(admin: AdminClient, cluster: KafkaCluster, path: str, timeout_s: float) -> list[int]:
    try:
        brokers = admin.list_topics(timeout=timeout_s).brokers
    except KafkaException as exc:
        raise ClusterProblem(Violation(
            f"{path}.bootstrap_servers", f"cannot reach Kafka at {cluster.bootstrap_servers} within {timeout_s:g}s "
            f"({exc.args[0].str() if exc.args and hasattr(exc.args[0], 'str') else exc})",
            "start the cluster or fix the address/security settings; or validate with --offline",
            kind=UNREACHABLE)) from None
    if not brokers:
        raise ClusterProblem(Violation(f"{path}.bootstrap_servers", "the cluster answered with no live brokers",
                                       "wait for the brokers to start, or validate with --offline", kind=UNREACHABLE))
    return sorted(brokers)


def transaction_max_timeout_ms(cluster: KafkaCluster, timeout_s: float = 10.0, path: str = "sink.kafka") -> int | None:
    """The broker's ``transaction.max.timeout.ms`` (None if it does not report one)."""
    admin = _admin(cluster, path)
    ids = _broker_ids(admin, cluster, path, timeout_s)
    resource = ConfigResource(ResourceType.BROKER, str(ids[0]))
    try:
        for attempt in Retrying(retry=retry_if_exception(_transient), stop=stop_after_delay(timeout_s),
                                wait=wait_exponential(0.1, max=1.0), reraise=True):
            with attempt:
                entries = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(timeout_s)
    except (KafkaException, TimeoutError) as exc:
        raise ClusterProblem(Violation(f"{path}.bootstrap_servers", f"DescribeConfigs on broker {ids[0]} failed: "
                                       f"{exc or 'no answer within the timeout'}",
                                       "grant DescribeConfigs on the cluster, or validate with --offline",
                                       kind=UNREACHABLE)) from None
    entry = entries.get(MAX_TIMEOUT_KEY)
    return int(entry.value) if entry is not None and entry.value is not None else None


def reachable(cluster: KafkaCluster, path: str, timeout_s: float) -> None:
    _broker_ids(_admin(cluster, path), cluster, path, timeout_s)


def live_context(cfg: PipelineConfig, timeout_s: float = 10.0) -> tuple[Context, list[Violation]]:
    """(what the rules may know from the brokers, problems reaching them); each cluster is asked once."""
    problems, broker_max, asked = [], None, set()
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
    if source.bootstrap_servers and source.bootstrap_servers not in asked:
        try:
            reachable(source, "source.kafka", timeout_s)
        except ClusterProblem as exc:
            problems.append(exc.violation)
    return Context(broker_max_timeout_ms=broker_max), problems
