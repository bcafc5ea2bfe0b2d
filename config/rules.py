"""Validation rules over one ``PipelineConfig``: small functions, every violation reported at once.

Each rule is ``rule(config, context) -> list[Violation]`` and knows nothing of the others;
``check`` runs them all. Safety rules for exactly-once live in ``kafka_eos.config.rules_safety``.
``check`` then runs the backstops its caller passes (``Backstop``: a check given every violation
found so far); config itself has none (the connectors' layer adds the check that its own option
parsers accept the file).
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

from kafka_eos.config.late_records import LateSpecError, late_spec
from kafka_eos.config.model import KafkaCluster, OnDecodeError, PipelineConfig, TransformSpec
from kafka_eos.config.rules_formats import schemas
from kafka_eos.config.rules_metrics import metrics
from kafka_eos.config.records import records_conflicts
from kafka_eos.config.rules_safety import SAFETY_RULES
from kafka_eos.config.rules_timestamp import timestamp_column
from kafka_eos.config.spark_option_table import yaml_keys
from kafka_eos.config.state_backend import state
from kafka_eos.config.violations import Backstop, Context, Rule, Violation
from kafka_eos.option_map import OptionMap
from kafka_eos.txn.cluster.client_settings import ClientSettingsError, check_client_settings

SQL_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
# what makes Spark keep state across batches: an aggregation (GROUP BY, a time window), a
# deduplication (DISTINCT, SQL's dropDuplicates) or a join
STATEFUL_SQL = re.compile(r"(?is)\bgroup\s+by\b|\bdistinct\b|\bjoin\b|\b(?:session_)?window\s*\(")


def stateful(t: TransformSpec) -> bool:
    """Whether the transform (``sql`` and ``steps``, comments aside) keeps state across batches."""
    texts = [t.sql or ""] + [e for step in t.steps for e in step.exprs]
    return any(STATEFUL_SQL.search(SQL_COMMENT.sub(" ", text)) for text in texts)


def _cluster(cluster: KafkaCluster, path: str) -> list[Violation]:
    found = []
    if not cluster.bootstrap_servers:
        found.append(Violation(f"{path}.bootstrap_servers", "the Kafka bootstrap servers are missing",
                               f"set {path}.bootstrap_servers: host1:9092,host2:9092"))
    for key, _ in cluster.properties:
        if key.startswith("kafka."):
            found.append(Violation(f'{path}.properties["{key}"]', "client settings are written without 'kafka.'",
                                   f"rename it to {key[len('kafka.'):]}"))
        elif key == "bootstrap.servers":
            found.append(Violation(f'{path}.properties["{key}"]', "bootstrap servers have their own key",
                                   f"move the value to {path}.bootstrap_servers"))
    return found


def clusters(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    return _cluster(cfg.source.kafka, "source.kafka") + _cluster(cfg.sink.kafka, "sink.kafka")


def client_settings(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    """The one rule of ``txn.client_settings`` (keystores; on the exactly-once sink's cluster, what
    the transaction control plane carries), so no setting is refused once the run started. It does
    not read ``ctx``: its result before the live checks is its result after them."""
    found = []
    for path, cluster, control_plane in (("source.kafka", cfg.source.kafka, False),
                                         ("sink.kafka", cfg.sink.kafka, cfg.exactly_once)):
        try:
            check_client_settings(cluster.client_conf(), control_plane)
        except ClientSettingsError as exc:
            found.append(Violation(f'{path}.properties["{exc.key}"]', exc.reason, exc.fix))
    return found


def subscription(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    s = cfg.source
    given = [name for name, value in (("topics", s.topics), ("pattern", s.pattern), ("assign", s.assign)) if value]
    if len(given) != 1:
        return [Violation("source.topics", f"set exactly one of topics, pattern, assign (got: {', '.join(given) or 'none'})",
                          "write e.g. topics: [orders], or pattern: 'orders-.*'")]
    if s.pattern:
        try:
            re.compile(s.pattern)
        except re.error as exc:
            return [Violation("source.pattern", f"{s.pattern!r} is not a regular expression: {exc}",
                              "write a Java/Python regex such as 'orders-.*'")]
    return []


def sink_target(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    if bool(cfg.sink.topic) == bool(cfg.sink.topic_column):
        return [Violation("sink.topic", "set exactly one of sink.topic and sink.topic_column",
                          "write sink.topic: <output topic>, or topic_column: <column of the transform>")]
    return []


def decode_errors(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    e = cfg.errors
    if e.on_decode_error is OnDecodeError.DLQ and not e.dlq_topic:
        return [Violation("errors.dlq_topic", "on_decode_error is dlq but no DLQ topic is named",
                          "set errors.dlq_topic: <name>-dlq (on the sink cluster)")]
    if e.on_decode_error is OnDecodeError.DLQ and cfg.sink.topic_column:
        return [Violation("sink.topic_column", "a DLQ needs the output topic in sink.topic "
                          "(failed records are routed with a topic column of their own)", "set sink.topic instead")]
    return []


def _input_topics(cfg: PipelineConfig) -> set[str]:
    return set(cfg.source.topics) | {t for t, _ in cfg.source.assign}


def no_loops(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    inputs = _input_topics(cfg)
    found = []
    if cfg.sink.topic and cfg.sink.topic in inputs:
        found.append(Violation("sink.topic", f"the pipeline writes to its own input topic {cfg.sink.topic!r}",
                               "write to another topic (a pipeline reading its output loops forever)"))
    dlq = cfg.errors.dlq_topic
    if dlq and (dlq in inputs or dlq == cfg.sink.topic):
        found.append(Violation("errors.dlq_topic", f"the DLQ topic {dlq!r} is also an input or the output topic",
                               "use a topic of its own, e.g. <output>-dlq"))
    return found


def transform(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    t = cfg.transform
    if not t.sql:
        return []
    sql = SQL_COMMENT.sub(" ", t.sql).strip()
    found = []
    if not re.match(r"(?is)^(select|with)\b", sql):
        found.append(Violation("transform.sql", "the transform must be one SELECT query",
                               "write SELECT ... FROM source ..."))
    if not re.search(r"(?is)\b(from|join)\s+source\b", sql):
        found.append(Violation("transform.sql", "the query does not read the view 'source' (the decoded input)",
                               "write ... FROM source ..."))
    if ";" in sql.rstrip(";"):
        found.append(Violation("transform.sql", "only one statement is allowed", "remove the extra statements"))
    if re.search(r"(?is)\bgroup\s+by\b", sql) and t.watermark is None:
        found.append(Violation("transform.watermark", "a streaming aggregation (GROUP BY) needs a watermark to emit "
                               "its results to Kafka (append mode)",
                               "add transform.watermark: {column: event_time, expression: value.<time field>, "
                               "delay: 10 minutes} and group by window(event_time, ...)"))
    return found


def late_records(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    w, key = cfg.transform.watermark, "transform.watermark.late_topic"
    if w is None or not w.late_topic:
        return []
    found = []
    inputs = _input_topics(cfg)
    if w.late_topic in inputs | {cfg.sink.topic, cfg.errors.dlq_topic}:
        found.append(Violation(key, f"the late topic {w.late_topic!r} is also an input, the output or the DLQ topic",
                               "use a topic of its own, e.g. <output>-late"))
    if cfg.sink.topic_column:
        found.append(Violation("sink.topic_column", "a late topic needs the output topic in sink.topic "
                               "(late records are routed with a topic column of their own)", "set sink.topic instead"))
    try:
        late_spec(cfg.transform.sql, w.column)
    except LateSpecError as exc:
        found.append(Violation("transform.sql", f"late_topic cannot tell which records are late: {exc}",
                               f"group by one window over {w.column} with literal durations, or remove late_topic"))
    return found


def option_conflicts(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    """``options`` pass other Spark options through; they must not redo what a key already says (the
    YAML key of each option is its declaration's, ``spark_option_table``; names in any case)."""
    found = []
    for side, options in (("source", cfg.source.options), ("sink", cfg.sink.options)):
        modeled = OptionMap(yaml_keys(side))  # option -> the YAML key that sets it (the declaration's)
        for key, _ in options:
            if key.lower().startswith("kafka."):
                found.append(Violation(f'{side}.options["{key}"]', "Kafka client settings belong to the cluster",
                                       f"move it to {side}.kafka.properties as {key[len('kafka.'):]}"))
            elif key in modeled:
                found.append(Violation(f'{side}.options["{key}"]', f"{key} has its own key",
                                       f"set {modeled[key]} instead"))
    return found + records_conflicts(cfg)


def check(cfg: PipelineConfig, ctx: Context = Context(), backstops: Sequence[Backstop] = (),
          ran: Mapping[Rule, list[Violation]] | None = None) -> list[Violation]:
    """Every violation of ``cfg`` (empty when valid), in rule order, then what ``backstops`` add
    (each given the rules' violations). ``ran``: rules the caller already ran on ``cfg``, with their
    violations, reused rather than run again (validate's ``client_settings``, which reads keystores)."""
    ran = ran or {}
    found = [v for rule in RULES + SAFETY_RULES for v in (ran[rule] if rule in ran else rule(cfg, ctx))]
    return found + [v for backstop in backstops for v in backstop(cfg, found)]


RULES: list[Rule] = [clusters, client_settings, subscription, schemas, sink_target, decode_errors, no_loops, transform,
                     late_records, option_conflicts, metrics, state, timestamp_column]
