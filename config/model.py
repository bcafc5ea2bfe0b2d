"""The pipeline configuration: one frozen ``PipelineConfig`` built from a YAML file (format v1).

Invariants:
- Every object is frozen and hashable; mappings are sorted tuples of pairs (``props``).
- Values of secret keys (``kafka_eos.secrets.is_secret_key``: SASL passwords, SSL keys, JAAS
  lines, schema-registry basic auth) are held as ``Secret``; their ``repr``/``str`` is ``***``.
  Only ``Secret.reveal()`` (called when a Kafka client or a Spark option map is built) returns the value.
- The model holds what the YAML says, with defaults filled in; it does not decide whether the
  settings are safe: ``kafka_eos.config.rules`` does, and reports every violation at once. Fields the
  rules require (bootstrap servers, checkpoint location, transactional-id prefix) may be None
  here so that a file with several mistakes still loads and all of them are reported.
- ``sink.transactional_id_prefix`` left unset is derived (``with_derived_prefix``):
  ``<name>-<8 hex of sha256(checkpoint.location)>``, so one pipeline file run on two checkpoints
  gets two prefixes; a set prefix is kept as written.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Mapping

from kafka_eos.config.state_backend import StateSpec
from kafka_eos.secrets import Secret, Value, is_secret_key, reveal
from kafka_eos.secrets import redacted as redacted_settings
from kafka_eos.serde.formats import DataFormat, OnDecodeError, Registry
from kafka_eos.txn.log.sink_log_segments import DEFAULT_EVIDENCE_RETENTION_MS
from kafka_eos.txn.protocol.timeouts import DEFAULT_BATCH_MARGIN_MS, DEFAULT_TRANSACTION_TIMEOUT_MS

FORMAT_VERSION = 1
DEFAULT_METRICS_PORT = 9464      # the OpenTelemetry Prometheus exporter's port; docker/prometheus.yml scrapes it
DEFAULT_METRICS_HOST = "127.0.0.1"
DEFAULT_SAMPLE_INTERVAL_S = 15   # the operator probe's rate: one transaction listing and two ListOffsets
Props = tuple[tuple[str, Value], ...]


def props(mapping: Mapping[str, object]) -> Props:
    """Sorted pairs; values of secret-looking keys become ``Secret``."""
    return tuple(sorted((str(k), v if isinstance(v, Secret) else Secret(str(v)) if is_secret_key(str(k))
                         else str(v)) for k, v in mapping.items()))


class Records(str, Enum):
    """Where kafka-eos keeps its own records (``checkpoint.records``)."""
    CHECKPOINT = "checkpoint"  # beside Spark's checkpoint, at its location (a path or a URI)
    KAFKA = "kafka"            # in a compacted topic of the output's cluster (``txn.log.stores``)


class Guarantee(str, Enum):
    EXACTLY_ONCE = "exactly_once"
    AT_LEAST_ONCE = "at_least_once"


@dataclass(frozen=True)
class KafkaCluster:
    """Where a Kafka cluster is and how to talk to it (client settings, secrets as ``Secret``)."""
    bootstrap_servers: str | None = None
    properties: Props = ()

    def get(self, key: str) -> str | None:
        return reveal(dict(self.properties).get(key))

    def client_conf(self) -> dict[str, str]:
        """librdkafka/Java client settings with secrets revealed: for clients only, never log it."""
        conf = {k: reveal(v) or "" for k, v in self.properties}
        if self.bootstrap_servers:
            conf["bootstrap.servers"] = self.bootstrap_servers
        return conf

    def redacted(self) -> dict[str, str]:
        """The settings to show: ``***`` for every secret."""
        return {"bootstrap.servers": self.bootstrap_servers or "", **redacted_settings(dict(self.properties))}


@dataclass(frozen=True)
class SchemaRef:
    """A schema: a file (path resolved against the YAML file), inline text, and/or a registry; Avro-style
    JSON for avro and plain json, a JSON Schema for json with a registry, a .proto for protobuf.
    ``text`` is the schema text once read (None when only a registry is named)."""
    file: str | None = None
    inline: str | None = None
    registry: Registry | None = None
    text: str | None = field(default=None, compare=False)
    message: str | None = None   # format protobuf: the message's name (default: the file's first)


@dataclass(frozen=True)
class Align:
    """Event-time alignment of the source (``source.align``): partitions read within ``max_drift_ms``
    of record time of the slowest; one caught up for ``idle_timeout_ms`` no longer holds others back."""
    max_drift_ms: int
    idle_timeout_ms: int = 30_000


@dataclass(frozen=True)
class SourceSpec:
    kafka: KafkaCluster = KafkaCluster()
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[tuple[str, tuple[int, ...]], ...] = ()
    starting_offsets: str = "latest"          # earliest | latest | Spark's JSON offsets
    max_offsets_per_trigger: int | None = None
    format: DataFormat = DataFormat.BYTES
    key_format: DataFormat = DataFormat.BYTES   # like format: json, avro and protobuf decode with key_schema
    schema: SchemaRef | None = None
    key_schema: SchemaRef | None = None         # the key's schema (registry subject <topic>-key)
    include_headers: bool = False
    align: Align | None = None                 # event-time alignment; None: off
    options: Props = ()                        # other Spark source options, passed as given


@dataclass(frozen=True)
class Step:
    """One transform step: ``filter`` (a condition), ``select`` (expressions) or ``key`` (an expression)."""
    kind: str
    exprs: tuple[str, ...]


@dataclass(frozen=True)
class Watermark:
    column: str
    delay: str
    delay_ms: int
    expression: str | None = None   # defines ``column`` first (e.g. ``value.created_at``)
    late_topic: str | None = None   # source records behind the watermark go here (same transaction)


@dataclass(frozen=True)
class TransformSpec:
    sql: str | None = None
    steps: tuple[Step, ...] = ()
    watermark: Watermark | None = None
    allow_nondeterministic: bool = False   # opt out of the replay-determinism check (rand(), ...)


@dataclass(frozen=True)
class SinkSpec:
    kafka: KafkaCluster = KafkaCluster()
    topic: str | None = None
    topic_column: str | None = None
    key_column: str | None = "key"
    value_column: str = "value"
    headers_column: str | None = None
    partition_column: str | None = None         # each row's output partition (an integer column)
    timestamp_column: str | None = "timestamp"  # each record's CreateTime (timestamp/long); None: the producer's
    format: DataFormat = DataFormat.BYTES
    schema: SchemaRef | None = None
    key_format: DataFormat = DataFormat.BYTES   # bytes/string: the key column as given; json, avro, protobuf: encoded
    key_schema: SchemaRef | None = None         # the key's schema (registry subject <topic>-key)
    transactional_id_prefix: str | None = None
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    batch_margin_ms: int = DEFAULT_BATCH_MARGIN_MS
    evidence_retention_ms: int = DEFAULT_EVIDENCE_RETENTION_MS  # the sink log's committed records, for verify
    fixed_partitions: bool = False              # an output topic that grew stops the query
    options: Props = ()                        # other kafka-eos sink options, passed as given


@dataclass(frozen=True)
class Trigger:
    """``available_now`` or a processing-time interval (0 = as fast as possible, Spark's default)."""
    interval_ms: int = 0
    available_now: bool = False

    def __str__(self) -> str:
        return "available_now" if self.available_now else f"{self.interval_ms} ms"


@dataclass(frozen=True)
class CheckpointSpec:
    location: str | None = None
    trigger: Trigger = Trigger()
    records: Records = Records.CHECKPOINT


@dataclass(frozen=True)
class ErrorsSpec:
    on_decode_error: OnDecodeError = OnDecodeError.FAIL
    dlq_topic: str | None = None


@dataclass(frozen=True)
class MetricsSpec:
    """The driver's Prometheus endpoint (``metrics:``); loopback unless ``host`` says otherwise."""
    port: int = DEFAULT_METRICS_PORT
    host: str = DEFAULT_METRICS_HOST
    sample_interval_s: int = DEFAULT_SAMPLE_INTERVAL_S   # how often the output's broker-side state is sampled
    tls_cert_file: str | None = None       # PEM certificate (chain) of the endpoint: HTTPS when set
    tls_key_file: str | None = None        # its PEM private key
    basic_auth_user_info: Secret | None = None   # "user:password" a scrape must send (HTTP basic auth)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls_cert_file else 'http'}://{host}:{self.port}/metrics"


@dataclass(frozen=True)
class PipelineConfig:
    """One pipeline file, resolved. ``origin`` is the file it came from (for messages)."""
    version: int = FORMAT_VERSION
    name: str | None = None
    source: SourceSpec = SourceSpec()
    transform: TransformSpec = TransformSpec()
    sink: SinkSpec = SinkSpec()
    guarantee: Guarantee = Guarantee.EXACTLY_ONCE
    checkpoint: CheckpointSpec = CheckpointSpec()
    errors: ErrorsSpec = ErrorsSpec()
    metrics: MetricsSpec | None = None     # None: no endpoint unless ``kafka-eos run --metrics-port``
    state: StateSpec = StateSpec()         # the state store of a stateful transform (``config.state_backend``)
    origin: str = field(default="<memory>", compare=False)
    env_secrets: tuple[Secret, ...] = field(default=(), compare=False)  # values of secret-named ${VARS}

    @property
    def exactly_once(self) -> bool:
        return self.guarantee is Guarantee.EXACTLY_ONCE

    def secrets(self) -> list[Secret]:
        """Every secret the configuration holds (what ``kafka_eos.config.redact`` must hide)."""
        found = list(self.env_secrets)
        found += [v for cluster in (self.source.kafka, self.sink.kafka) for _, v in cluster.properties
                 if isinstance(v, Secret)]
        found += [v for _, v in self.source.options + self.sink.options if isinstance(v, Secret)]
        for schema in (self.source.schema, self.source.key_schema, self.sink.schema, self.sink.key_schema):
            if schema and schema.registry and schema.registry.basic_auth_user_info:
                found.append(schema.registry.basic_auth_user_info)
        if self.metrics and self.metrics.basic_auth_user_info:
            found.append(self.metrics.basic_auth_user_info)
        return found


_NOT_IN_PREFIX = re.compile(r"[^A-Za-z0-9._\-]+")


def derived_prefix(name: str | None, checkpoint_location: str) -> str:
    """``<name>-<8 hex of the checkpoint location>`` (name reduced to prefix characters; 'kafka-eos' without one)."""
    stem = _NOT_IN_PREFIX.sub("-", name or "").strip("-")[:150] or "kafka-eos"
    return f"{stem}-{hashlib.sha256(checkpoint_location.rstrip('/').encode('utf-8')).hexdigest()[:8]}"


def with_derived_prefix(cfg: PipelineConfig) -> PipelineConfig:
    """``cfg`` with its transactional-id prefix derived when unset and a checkpoint location is given."""
    if cfg.sink.transactional_id_prefix or not cfg.checkpoint.location:
        return cfg
    return replace(cfg, sink=replace(cfg.sink, transactional_id_prefix=derived_prefix(cfg.name, cfg.checkpoint.location)))
