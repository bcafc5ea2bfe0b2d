"""The last rule: the connectors' own option parsers must accept the options ``kafka_eos.config.spark_options``
builds, so a file that validates is one the kafka-eos source and sink accept when the query starts.

Invariant: a section that already has violations is not asked again (its first problem is
already reported with a YAML path); the connector's message is reported under ``source`` /
``sink`` as it stands.
"""
from __future__ import annotations

from kafka_eos.config.model import PipelineConfig
from kafka_eos.config.spark_options import sink_options, source_options
from kafka_eos.config.violations import Violation
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
    result = [] if _has(found, "source") else _source(cfg)
    if cfg.exactly_once and not _has(found, "sink") and not _has(found, "checkpoint"):
        result += _sink(cfg)
    return result
