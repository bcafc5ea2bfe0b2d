"""Validation as the pipeline runs it: the config rules, then the connectors' backstop.

The backstop (``connectors_accept``) asks the kafka-eos source's and sink's own option parsers
to accept the options ``spark_options`` builds, so a file that validates is one the source and
the sink accept when the query starts. Option names, kinds and YAML keys are declared once
(``config.spark_option_table``), so the rules and the parsers cannot disagree on those; what the
backstop adds is what only the parsers know: client settings they refuse (``auto.offset.reset``,
unsafe producer settings), the values of options passed through ``<side>.options``, and test
hooks set without ``KAFKA_EOS_TEST_HOOKS=1``. ``check``, ``validate_files`` and ``load_valid`` are the
config layer's functions with that backstop; every entry point that validates (``kafka-eos
validate``/``run``/``describe``, the spark-submit entry, the demo) calls these.

Invariant: a section that already has violations is not asked again (its first problem is
already reported with a YAML path); the connector's message is reported under ``source`` /
``sink`` as it stands.
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence

from kafka_eos.config import rules, validate
from kafka_eos.config.model import PipelineConfig, Records
from kafka_eos.config.violations import Context, Violation
from kafka_eos.connectors.pipeline import checkpoint_files
from kafka_eos.connectors.pipeline.spark_options import sink_options, source_options
from kafka_eos.connectors.sink.options import sink_config
from kafka_eos.connectors.source.options import SourceOptionError, parse_source_options


def _source(cfg: PipelineConfig) -> list[Violation]:
    try:
        parse_source_options(source_options(cfg), streaming=True)
    except (SourceOptionError, ValueError) as exc:
        return [Violation("source", f"the kafka-eos source refuses these settings: {exc}",
                          "change the source.kafka.properties / source.options setting named in the message")]
    return []


def _sink(cfg: PipelineConfig) -> list[Violation]:
    try:
        sink_config(sink_options(cfg))
    except ValueError as exc:
        return [Violation("sink", f"the kafka-eos sink refuses these settings: {exc}",
                          "change the sink.kafka.properties / sink.options setting named in the message")]
    return []


def _has(found: list[Violation], section: str) -> bool:
    return any(v.path == section or v.path.startswith(section + ".") for v in found)


def connectors_accept(cfg: PipelineConfig, found: list[Violation]) -> list[Violation]:
    """The backstop: what the source's and the sink's option parsers refuse (``found``: the
    rules' violations)."""
    result = [] if _has(found, "source") else _source(cfg)
    if cfg.exactly_once and not _has(found, "sink") and not _has(found, "checkpoint"):
        result += _sink(cfg)
    return result


BACKSTOPS = (connectors_accept,)


def check(cfg: PipelineConfig, ctx: Context = Context()) -> list[Violation]:
    """Every violation of ``cfg``: the config rules', then the connectors'."""
    return rules.check(cfg, ctx, BACKSTOPS)


def validate_files(paths: Sequence[str | os.PathLike], offline: bool = False, timeout_s: float = 10.0,
                   env: Mapping[str, str] | None = None) -> validate.Report:
    """``kafka-eos validate``: every file loaded, checked (live unless ``offline``), and across files."""
    return validate.validate_files(paths, offline, timeout_s, env, backstops=BACKSTOPS)


def load_valid(path: str | os.PathLike, offline: bool = False, timeout_s: float = 10.0) -> PipelineConfig:
    """The config of ``path``, or ``InvalidPipeline`` carrying every violation (redacted). A
    pipeline whose records are in Kafka has this process read its checkpoint at a URI through a JVM
    (``checkpoint_files.prefer_own_jvm``: a run's session's, else one of its own)."""
    cfg = validate.load_valid(path, offline, timeout_s, backstops=BACKSTOPS)
    if cfg.checkpoint.records is Records.KAFKA:
        checkpoint_files.prefer_own_jvm()
    return cfg
