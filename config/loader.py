"""Pipeline YAML -> ``PipelineConfig``: parse, interpolate ``${ENV}``, build the frozen model.

Invariants:
- ``load_file``/``load_text`` never raise on bad content: they return the config (None only
  when the file cannot be read or parsed, or names an unsupported format version) together
  with every structural violation (unknown keys with "did you mean", wrong types, unset
  variables, unreadable schema files). Semantic rules live in ``kafka_eos.config.rules``.
- Relative schema files are resolved against the YAML file's directory.
- The values the interpolation took from secret-named variables are kept on the config
  (``env_secrets``) for redaction, and the registry's basic auth is a ``Secret``; which client
  settings are secret is ``kafka_eos.secrets``' rule, applied by the model.
"""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import yaml

from kafka_eos.config.interpolate import Interpolator
from kafka_eos.config.model import (FORMAT_VERSION, Align, CheckpointSpec, DataFormat, ErrorsSpec, Guarantee,
                          KafkaCluster, MetricsSpec, OnDecodeError, PipelineConfig, Records, Registry, SchemaRef,
                          Secret, SinkSpec, SourceSpec, Trigger, props, with_derived_prefix)
from kafka_eos.config.sections import Section
from kafka_eos.config.state_backend import state_spec
from kafka_eos.config.transform_loader import transform_spec
from kafka_eos.config.violations import Violation
from kafka_eos.serde.formats import SubjectStrategy

Loaded = tuple[PipelineConfig | None, list[Violation]]


def load_file(path: str | os.PathLike, env: Mapping[str, str] | None = None) -> Loaded:
    file = Path(path)
    try:
        text = file.read_text()
    except OSError as exc:
        return None, [Violation("<file>", f"cannot read {file}: {exc.strerror}", "check the path", file=str(file))]
    return load_text(text, str(file), env, file.resolve().parent)


def load_text(text: str, origin: str = "<memory>", env: Mapping[str, str] | None = None,
              base_dir: Path | None = None) -> Loaded:
    try:
        tree = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, [Violation("<file>", f"not valid YAML: {exc}", "fix the YAML syntax at the line shown",
                                file=origin)]
    interpolator = Interpolator(os.environ if env is None else env)
    tree = interpolator.tree(tree)
    problems: list[Violation] = list(interpolator.violations)
    top = Section(tree, "", problems)
    config = _pipeline(top, base_dir or Path.cwd(), problems)
    if config is not None:
        config = _with_origin(config, origin, interpolator.secret_values)
    return config, [_in_file(v, origin) for v in problems]


def _in_file(v: Violation, origin: str) -> Violation:
    return Violation(v.path, v.message, v.fix, v.kind, origin)


def _with_origin(config: PipelineConfig, origin: str, secret_values: set[str]) -> PipelineConfig:
    return replace(config, origin=origin, env_secrets=tuple(Secret(s) for s in sorted(secret_values)))


def _pipeline(top: Section, base_dir: Path, problems: list[Violation]) -> PipelineConfig | None:
    version = top.int("version", None)
    if version is None and not any(p.path == "version" for p in problems):
        top.problem("version", "the format version is missing", f"add 'version: {FORMAT_VERSION}' as the first line")
    elif version is not None and version != FORMAT_VERSION:
        top.problem("version", f"format version {version} is not supported by this kafka-eos "
                    f"(it reads version {FORMAT_VERSION})", f"set version: {FORMAT_VERSION}, or use a newer kafka-eos")
        return None
    config = PipelineConfig(
        name=top.str("name"),
        source=_source(top.section("source"), base_dir),
        transform=transform_spec(top.section("transform")),
        sink=_sink(top.section("sink"), base_dir),
        guarantee=top.choice("guarantee", Guarantee, Guarantee.EXACTLY_ONCE),
        checkpoint=_checkpoint(top.section("checkpoint")),
        errors=_errors(top.section("errors")),
        metrics=_metrics(top.section("metrics"), given=top.has("metrics")),
        state=state_spec(top.section("state")),
    )
    top.done()
    return with_derived_prefix(config)


def _cluster(s: Section) -> KafkaCluster:
    cluster = KafkaCluster(bootstrap_servers=s.str("bootstrap_servers"), properties=props(s.mapping("properties")))
    s.done()
    return cluster


def _schema(s: Section | None, base_dir: Path) -> SchemaRef | None:
    if s is None:
        return None
    file, inline_value, message = s.str("file"), s.raw("inline"), s.str("message")
    inline = inline_value if isinstance(inline_value, str) or inline_value is None else json.dumps(inline_value)
    registry = _registry(s.optional_section("registry"))
    s.done()
    text = inline
    if file:
        resolved = (base_dir / file).resolve()
        try:
            text = resolved.read_text()
            file = str(resolved)
        except OSError as exc:
            s.problem(s.at("file"), f"cannot read schema file {resolved}: {exc.strerror}",
                      "give a path relative to the pipeline file (e.g. ../schemas/order.avsc) or an absolute one")
    return SchemaRef(file=file, inline=inline, registry=registry, text=text, message=message)


def _registry(s: Section | None) -> Registry | None:
    if s is None:
        return None
    url, subject, auth = s.str("url"), s.str("subject"), s.str("basic_auth_user_info")
    strategy = s.choice("subject_strategy", SubjectStrategy, SubjectStrategy.TOPIC)
    auto_register, use_latest = s.bool("auto_register", True), s.bool("use_latest_version", False)
    version, schema_id = s.int("version", None, minimum=1), s.int("id", None, minimum=0)
    s.done()
    if not url:
        s.problem(s.at("url"), "the schema registry URL is missing", "set url: http://registry:8081")
        return None
    return Registry(url=url, subject=subject, basic_auth_user_info=Secret(auth) if auth else None,
                    subject_strategy=strategy, auto_register=bool(auto_register), use_latest_version=bool(use_latest),
                    version=version, schema_id=schema_id)


def _assign(s: Section) -> tuple[tuple[str, tuple[int, ...]], ...]:
    value = s.raw("assign")
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(p, list) and all(isinstance(i, int) for i in p)
                                              for p in value.values()):
        s.problem(s.at("assign"), f"must map topics to partition lists, got {value!r}",
                  "write assign: {orders: [0, 1]}")
        return ()
    return tuple(sorted((str(t), tuple(p)) for t, p in value.items()))


def _offsets(s: Section) -> str:
    value = s.raw("starting_offsets", "latest")
    if isinstance(value, dict):
        return json.dumps({str(t): {str(p): o for p, o in parts.items()} if isinstance(parts, dict) else parts
                           for t, parts in value.items()}, sort_keys=True)
    text = str(value).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    if text.startswith("{"):
        return text
    s.problem(s.at("starting_offsets"), f"{value!r} is not earliest, latest or per-partition offsets",
              "write starting_offsets: earliest, or {orders: {'0': 42}} (-2 = earliest, -1 = latest)")
    return "latest"


def _source(s: Section, base_dir: Path) -> SourceSpec:
    spec = SourceSpec(
        kafka=_cluster(s.section("kafka")),
        topics=s.str_list("topics"),
        pattern=s.str("pattern"),
        assign=_assign(s),
        starting_offsets=_offsets(s),
        max_offsets_per_trigger=s.int("max_offsets_per_trigger", None, minimum=1),
        format=s.choice("format", DataFormat, DataFormat.BYTES),
        key_format=s.choice("key_format", DataFormat, DataFormat.BYTES),
        schema=_schema(s.optional_section("schema"), base_dir),
        key_schema=_schema(s.optional_section("key_schema"), base_dir),
        include_headers=s.bool("include_headers", False),
        align=_align(s.optional_section("align")),
        options=props(s.mapping("options")),
    )
    s.done()
    return spec


def _align(s: Section | None) -> Align | None:
    if s is None:
        return None
    align = Align(max_drift_ms=s.duration_ms("max_drift", 0), idle_timeout_ms=s.duration_ms("idle_timeout", 30_000))
    s.done()
    if not s.has("max_drift"):
        s.problem(s.at("max_drift"), "event-time alignment needs max_drift",
                  "write align: {max_drift: 30 seconds} (idle_timeout is optional, default 30 seconds)")
        return None
    return align


def _sink(s: Section, base_dir: Path) -> SinkSpec:
    defaults = SinkSpec()
    spec = SinkSpec(
        kafka=_cluster(s.section("kafka")),
        topic=s.str("topic"),
        topic_column=s.str("topic_column"),
        key_column=s.str("key_column", "key"),
        value_column=s.str("value_column", "value") or "value",
        headers_column=s.str("headers_column"),
        partition_column=s.str("partition_column"),
        timestamp_column=s.str("timestamp_column", defaults.timestamp_column),
        format=s.choice("format", DataFormat, DataFormat.BYTES),
        schema=_schema(s.optional_section("schema"), base_dir),
        key_format=s.choice("key_format", DataFormat, DataFormat.BYTES),
        key_schema=_schema(s.optional_section("key_schema"), base_dir),
        transactional_id_prefix=s.str("transactional_id_prefix"),
        transaction_timeout_ms=s.int("transaction_timeout_ms", defaults.transaction_timeout_ms, minimum=1),
        batch_margin_ms=s.int("batch_margin_ms", defaults.batch_margin_ms),
        evidence_retention_ms=s.int("evidence_retention_ms", defaults.evidence_retention_ms, minimum=0),
        fixed_partitions=s.bool("fixed_partitions", defaults.fixed_partitions),
        options=props(s.mapping("options")),
    )
    s.done()
    return spec


REAL_TIME_WORDS = ("real_time", "realtime", "real_time_mode")
REAL_TIME_REFUSAL = ("Spark's Real-time Mode (Spark 4.1+) is not available to a kafka-eos pipeline on any pyspark: it "
                     "reads only Spark's own Kafka source and its Kafka sink is at-least-once, while kafka-eos commits "
                     "each micro-batch in Kafka transactions")


def _checkpoint(s: Section) -> CheckpointSpec:
    location = s.str("location")
    trigger_value = s.raw("trigger")
    word = trigger_value.strip().lower().replace("-", "_") if isinstance(trigger_value, str) else None
    if word == "available_now":
        trigger = Trigger(available_now=True)
    elif word in REAL_TIME_WORDS:
        s.problem(s.at("trigger"), REAL_TIME_REFUSAL, "write trigger: 0 seconds (batches back to back), "
                  "a processing-time interval, or available_now")
        trigger = Trigger()
    else:
        trigger = Trigger(interval_ms=s.duration_ms("trigger", 0))
    records = s.choice("records", Records, Records.CHECKPOINT)
    s.done()
    return CheckpointSpec(location=location, trigger=trigger, records=records)


def _errors(s: Section) -> ErrorsSpec:
    spec = ErrorsSpec(on_decode_error=s.choice("on_decode_error", OnDecodeError, OnDecodeError.FAIL),
                      dlq_topic=s.str("dlq_topic"))
    s.done()
    return spec


def _metrics(s: Section, given: bool) -> MetricsSpec | None:
    """``metrics: {port, host, sample_interval_s, tls_cert_file, tls_key_file, basic_auth_user_info}``
    (``metrics:`` alone: the defaults); None when the key is absent."""
    if not given:
        return None
    defaults = MetricsSpec()
    spec = MetricsSpec(port=s.int("port", defaults.port, minimum=1) or defaults.port,
                       host=s.str("host", defaults.host) or defaults.host,
                       sample_interval_s=s.int("sample_interval_s", defaults.sample_interval_s, minimum=1),
                       tls_cert_file=s.str("tls_cert_file"), tls_key_file=s.str("tls_key_file"),
                       basic_auth_user_info=Secret(auth) if (auth := s.str("basic_auth_user_info")) else None)
    s.done()
    return spec
